"""The recall-latency results as Markdown tables and plan outlines (pure functions)."""

from __future__ import annotations

import re
from typing import Any

from bench.harness.markdown import machine_line, table


def latency_table(results: dict[str, Any]) -> list[str]:
    """One row per (corpus, version, client count): latency, throughput, failures, CPU."""
    columns = [
        *("Corpus", "Version", "Rows in table", "Rows per agent", "Clients", "Calls", "Calls/s"),
        *("p50 ms", "p95 ms", "p99 ms", "Max ms", "Failures", "Server cores", "Postgres cores"),
    ]
    rows = []
    for s in results["scenarios"]:
        for r in [*s["runs"], *s.get("compare_runs", [])]:
            lat, cpu = r["latency"], r["cpu"]
            pg = cpu.get("postgres")
            rows.append(
                [
                    s["tier"],
                    f"{r.get('version', 'this')} {r.get('code', '')}",
                    f"{s['table_rows']:,}",
                    f"{s['agent_rows']:,}",
                    r["clients"],
                    lat["count"],
                    *(f"{lat[k]:.1f}" for k in ("throughput_per_s", "p50_ms", "p95_ms")),
                    *(f"{lat[k]:.1f}" for k in ("p99_ms", "max_ms")),
                    sum(r["failures"].values()),
                    f"{cpu['server']['cores']:.2f}",
                    "n/a" if pg is None else f"{pg['cores']:.2f}",
                ]
            )
    return table(columns, "ll" + "r" * 12, rows)


def load_table(results: dict[str, Any]) -> list[str]:
    """One row per corpus: load timings, sizes and the vector-channel check."""
    columns = [
        *("Corpus", "Rows loaded", "COPY s", "Index build s", "VACUUM ANALYZE s", "Total s"),
        *("Table MB", "HNSW MB", "Vector rows (min/mean)", "Vector recall@10 vs exact"),
        "Similarity vs exact",
    ]
    rows = []
    for s in results["scenarios"]:
        load, vec = s["load"], s["vector_channel"]
        rows.append(
            [
                s["tier"],
                f"{load['rows']:,}",
                load["copy_seconds"],
                f"{sum(load['index_seconds'].values()):.1f}",
                load["vacuum_analyze_seconds"],
                load["total_seconds"],
                load["table_mb"],
                load["indexes_mb"].get("memories_embedding_384", 0.0),
                f"{vec['min_vector_rows']}/{vec['mean_vector_rows']}",
                vec["recall_vs_exact"],
                vec.get("similarity_ratio", "n/a"),
            ]
        )
    return table(columns, "l" + "r" * 10, rows)


PLAN_KEY_LINES = re.compile(
    r"(Scan using|Seq Scan|Bitmap (Heap|Index) Scan|Sort  |Limit  |Execution Time|Planning Time"
    r"|^  CTE )"
)


def plan_outline(plan: str) -> list[str]:
    """The access paths and timings of a plan (the full text is in the JSON)."""
    return [
        re.sub(r"(Filter|Cond): .*", r"\1: ...", line)[:170]
        for line in plan.splitlines()
        if PLAN_KEY_LINES.search(line) and "never executed" not in line
    ]


def plan_times(plans: dict[str, str]) -> str:
    """The execution time of each recorded plan (chosen, forced custom, forced generic)."""
    times = {
        mode: next(
            (
                ln.split(":", 1)[1].strip()
                for ln in plan.splitlines()
                if ln.startswith("Execution Time")
            ),
            "?",
        )
        for mode, plan in plans.items()
    }
    return ", ".join(f"{mode}: {value}" for mode, value in times.items())


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables, then each scenario's plan outline."""
    m = results["machine"]
    lines = [
        f"{machine_line(m)}, {m['busy_cores_before_start']} cores busy at start."
        f" Service code snapshot {results.get('code')}.",
        "",
        *latency_table(results),
        "",
        *load_table(results),
    ]
    for s in results["scenarios"]:
        scans = {k: v for r in s["runs"] for k, v in r["index_scans"].items()}
        lines += [
            "",
            f"### {s['tier']}",
            "",
            f"Index scans during the runs: {scans}",
            "",
            f"Execution times: {plan_times(s['explain'])}",
            "",
            "Chosen plans (outline; a second statement's follows the first):",
            "",
            "```",
            *(
                line
                for mode, plan in s["explain"].items()
                if mode.startswith("chosen")
                for line in plan_outline(plan)
            ),
            "```",
        ]
    return "\n".join(lines) + "\n"
