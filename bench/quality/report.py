"""The LoCoMo results as Markdown tables (pure functions of the results JSON)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bench.harness.markdown import machine_line, outcomes, table
from bench.quality import scoring as quality

SHOWN = (
    *(("ndcg", "NDCG@10"), ("recall", "R@10"), ("recall50", "R@50")),
    *(("hit", "hit@10"), ("mrr", "MRR@10")),
)


def _f(value: Any) -> str:
    """Three decimals; ``n/a`` for a missing or NaN value."""
    return "n/a" if not isinstance(value, int | float) or value != value else f"{value:.3f}"


def metric_groups(results: dict[str, Any]) -> list[str]:
    """The categories present in the results, in the data set's order, then overall/macro."""
    present = {g for m in results["modes"] for v in m["variants"] for g in v["metrics"]}
    present |= set(results.get("offline_bm25", {}))
    return [n for n in quality.CATEGORY_NAMES.values() if n in present] + ["overall", "macro"]


def _cells(summary: dict[str, Any] | None) -> list[str]:
    if summary is None:
        return ["n/a"] * len(SHOWN)
    return [_f(summary.get(name)) for name, _ in SHOWN]


def quality_table(results: dict[str, Any], variant: str) -> list[str]:
    """Per category and overall/macro: the shown metrics for each mode."""
    modes = [
        (m["mode"], next((v for v in m["variants"] if v["name"] == variant), None))
        for m in results["modes"]
    ]
    columns = ["Category", "n"]
    for mode, _ in modes:
        columns += [f"{mode} {label}" for _, label in SHOWN]
    rows = []
    for group in metric_groups(results):
        count = next(
            (v["metrics"][group]["count"] for _, v in modes if v and group in v["metrics"]), 0
        )
        cells = [c for _, v in modes for c in _cells(v["metrics"].get(group) if v else None)]
        rows.append([group, count, *cells])
    return table(columns, "lr" + "r" * len(SHOWN) * len(modes), rows)


def category_table(results: dict[str, Any], metric: str = "ndcg") -> list[str]:
    """One row per (mode, variant) and the offline references: ``metric`` per category."""
    groups = metric_groups(results)
    rows: list[list[object]] = []
    for name in ("offline_bm25", "offline_bm25_stemmed"):
        if name in results:
            rows.append(
                ["offline", name, *(_f(results[name].get(g, {}).get(metric)) for g in groups)]
            )
    for m in results["modes"]:
        for v in m["variants"]:
            rows.append(
                [m["mode"], v["name"], *(_f(v["metrics"].get(g, {}).get(metric)) for g in groups)]
            )
    return table(["Mode", "Variant", *groups], "ll" + "r" * len(groups), rows)


def _settings(variant: dict[str, Any]) -> str:
    """A variant's service settings without the ``CPERSONA_`` prefix, plus ``deep``."""
    settings = ", ".join(f"{k.removeprefix('CPERSONA_')}={x}" for k, x in variant["env"].items())
    return (settings + (", deep" if variant["deep"] else "")).strip(", ") or "defaults"


def _tuning_rows(results: dict[str, Any]) -> Iterator[list[object]]:
    for m in results["modes"]:
        for v in m["variants"]:
            o, mac = v["metrics"]["overall"], v["metrics"]["macro"]
            d, lat = v["diagnostics"], v["latency"]
            yield [
                m["mode"],
                v["name"],
                _settings(v),
                *(_f(o.get(x)) for x in ("ndcg",)),
                _f(mac["ndcg"]),
                *(_f(o.get(x)) for x in ("recall", "recall50", "hit", "mrr")),
                d["fewer_than_10_rows"],
                d.get("short_with_matches"),
                d["zero_rows"],
                d["mean_rows"],
                f"{d['rows_with_cosine_share']:.2f}",
                f"{d['relevant_rows_with_cosine']}/{d['relevant_rows']}",
                f"{lat['p50_ms']:.1f}",
                f"{lat['p95_ms']:.1f}",
            ]


def tuning_table(results: dict[str, Any]) -> list[str]:
    """One row per (mode, variant): overall quality, row counts, latency."""
    columns = [
        *("Mode", "Variant", "Settings", "NDCG@10", "macro NDCG", "R@10", "R@50", "hit@10"),
        *("MRR@10", "<10 rows", "short w/ ≥10 sharing", "0 rows", "mean rows"),
        *("rows w/ cosine", "rel. rows w/ cosine", "p50 ms", "p95 ms"),
    ]
    return table(columns, "lll" + "r" * (len(columns) - 3), _tuning_rows(results))


def store_table(results: dict[str, Any]) -> list[str]:
    """Per mode: store outcomes, store and queue-drain time, store latency."""
    columns = [
        *("Mode", "Turns", "Outcomes", "Store s", "Queue drain s", "Total s"),
        *("Store p50 ms", "Store p95 ms"),
    ]
    rows = [
        [
            m["mode"],
            s["turns"],
            outcomes(s["outcomes"]),
            s["store_seconds"],
            s["queue_drain_seconds"],
            s["total_seconds"],
            f"{s['latency']['p50_ms']:.1f}",
            f"{s['latency']['p95_ms']:.1f}",
        ]
        for m in results["modes"]
        for s in [m["store"]]
    ]
    return table(columns, "lrlrrrrr", rows)


def what_if_table(results: dict[str, Any]) -> list[str]:
    """The offline fusion what-ifs (none when they did not run)."""
    what_ifs = results.get("what_if", {})
    columns = [
        "Offline fusion (BM25 + exact embeddings, not the service)",
        *("NDCG@10", "macro NDCG", "R@10", "R@50", "hit@10", "MRR@10"),
    ]
    rows = [
        [
            name,
            _f(o["ndcg"]),
            _f(mac["ndcg"]),
            *(_f(o.get(x)) for x in ("recall", "recall50", "hit", "mrr")),
        ]
        for name, summary in what_ifs.items()
        for o, mac in [(summary["overall"], summary["macro"])]
    ]
    return table(columns, "lrrrrrr", rows) if rows else []


def service_sections(results: dict[str, Any]) -> list[str]:
    """The tables of the service runs (none when only the what-ifs ran)."""
    if not results["modes"]:
        return []
    return [
        "Default settings:",
        "",
        *quality_table(results, "default"),
        "",
        "`deep: true` (diagnostic):",
        "",
        *quality_table(results, "deep"),
        "",
        *tuning_table(results),
        "",
        "NDCG@10 per category (every variant, and the offline BM25 references):",
        "",
        *category_table(results),
        "",
        *store_table(results),
        "",
    ]


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    m, o = results["machine"], results["options"]
    bm25, stemmed = results["offline_bm25"], results.get("offline_bm25_stemmed", {})
    lines = [
        f"{machine_line(m)}. {o['conversations']} conversations, {o['turns']}"
        f" turns, {o['questions']} questions, {o['clients']} clients. Service code snapshot"
        f" {results['code']}.",
        "",
        *service_sections(results),
        f"Offline BM25 on the same corpus/questions (k1 1.2, b 0.75, service stopwords):"
        f" NDCG@10 {bm25['overall']['ndcg']:.3f}, macro {bm25['macro']['ndcg']:.3f};"
        f" with Snowball stems {_f(stemmed.get('overall', {}).get('ndcg'))},"
        f" macro {_f(stemmed.get('macro', {}).get('ndcg'))}.",
        "",
        *what_if_table(results),
    ]
    return "\n".join(lines) + "\n"
