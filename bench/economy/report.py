"""The token-economy results as Markdown tables and proxy lines (pure functions of the JSON)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.economy.corpus import PREVIEW_CHARS
from bench.economy.judges import ANSWER_ORDER, SHORT_ANSWER_MAX
from bench.economy.report_features import features_markdown
from bench.economy.tally import COMPARED
from bench.harness.markdown import machine_line, pct, table

RESPONSES = (
    ("previews", "previews"),
    ("full_content", "full_content"),
    ("previews+get_contents", "previews + get_contents(top 2)"),
    ("previews+get_contents_trimmed", "previews + get_contents(trimmed of top 2)"),
    ("get_contents", "get_contents(top 2) alone"),
)
SHORT_NAMES = {
    "chars": "chars",
    "utf8_bytes": "bytes",
    "tokens_chars4": "tok c/4",
    "tokens_wordpiece": "tok wp≈",
    "tokens_minilm": "tok MiniLM",
}


def size_table(mode: dict[str, Any]) -> list[str]:
    """Mean and p95 per recall of each response shape, under every measure."""
    names = [n for n in SHORT_NAMES if n in mode["sizes"]["previews"]]
    columns = [f"Response ({mode['mode']})"]
    for n in names:
        columns += [f"mean {SHORT_NAMES[n]}", f"p95 {SHORT_NAMES[n]}"]
    rows = []
    for key, label in RESPONSES:
        stats = mode["sizes"][key]
        cells = [f"{stats[n][k]:,.0f}" for n in names for k in ("mean", "p95")]
        rows.append([label, *cells])
    return table(columns, "l" + "rr" * len(names), rows)


def saving_table(modes: Sequence[dict[str, Any]]) -> list[str]:
    """The saving against full_content, per mode, subset and measure."""
    columns = [
        *("Mode", "Subset (queries)", "Measure", "previews", "previews + get_contents(top 2)"),
        "previews + get_contents(trimmed of top 2)",
    ]
    rows = [
        [
            mode["mode"],
            f"{label} ({s['queries']})",
            SHORT_NAMES.get(name, name),
            *(pct(s[f"{m}_vs_full"]) for m in COMPARED),
        ]
        for mode in modes
        for subset, label in (("all", "all"), ("with_long_row", "≥ 1 trimmed row"))
        for name, s in mode["savings"][subset].items()
    ]
    return table(columns, "lllrrr", rows)


def shed_rows(label: str, rows_summary: dict[str, Any]) -> list[list[object]]:
    """Per measure: the share trimmed rows shed (mean, p5, p50, min) and the share meeting 60%."""
    return [
        [
            label,
            name,
            stats["count"],
            *(pct(stats[k]) for k in ("mean", "p5", "p50", "min", "share_meeting_60pct")),
        ]
        for name, stats in rows_summary.items()
        if isinstance(stats, dict) and stats.get("count")
    ]


def shed_table(results: dict[str, Any]) -> list[str]:
    """Trimmed rows, stored and returned in each mode: how much a preview sheds."""
    columns = [
        *("Trimmed rows", "Measure", "Rows", "Mean shed", "p5 shed", "p50 shed", "Min shed"),
        "≥ 60%",
    ]
    rows = shed_rows("stored, > 500 chars (content only)", results["corpus_row_shed"])
    for mode in results["modes"]:
        rows += shed_rows(f"returned, {mode['mode']}", mode["rows"])
    return table(columns, "ll" + "r" * 6, rows)


def _shares(counter: Mapping[str, int], keys: Sequence[str]) -> str:
    """``key count (share)`` for each of ``keys``."""
    total = sum(counter.values())
    parts = []
    for key in keys:
        count = counter.get(key, 0)
        parts.append(f"{key} {count} ({pct(count / total if total else None)})")
    return ", ".join(parts)


OUTCOMES = ("any_inside", "none_inside", "evidence_row_not_returned")


def proxy_lines(results: dict[str, Any]) -> list[str]:
    """The relevance-judgement proxy: corpus-level and in-response."""
    static = results["proxy_static"]
    where = ("inside", "straddles", "beyond")
    lines = [
        f"- Corpus level, every evidence turn: {_shares(static['evidence_turns'], where)}.",
        f"- Corpus level, evidence turns in rows over {PREVIEW_CHARS} chars:"
        f" {_shares(static['evidence_turns_in_long_rows'], where)}.",
        f"- Corpus level, questions with at least one evidence turn wholly inside a preview:"
        f" {_shares(static['questions'], ('any_inside', 'none_inside'))}.",
        f"- Short answers (≤ {SHORT_ANSWER_MAX} chars), first verbatim occurrence in the evidence"
        f" rows: {_shares(static['short_answers'], ANSWER_ORDER)}.",
    ]
    for mode in results["modes"]:
        proxy = mode["proxy_in_response"]
        long_keys = [f"long:{w}" for w in where]
        lines += [
            f"- In the {mode['mode']} responses, returned evidence turns in trimmed-size rows:"
            f" {_shares(proxy['evidence_turns'], long_keys)}; in short rows (always inside):"
            f" {sum(v for k, v in proxy['evidence_turns'].items() if k.startswith('short'))}.",
            f"- In the {mode['mode']} responses, questions:"
            f" {_shares(proxy['questions'], OUTCOMES)}.",
            judge_line(mode),
            checks_line(mode),
        ]
    return lines


def checks_line(mode: dict[str, Any]) -> str:
    """Row counts and consistency checks of one mode."""
    c, rows = mode["counts"], max(1, mode["counts"].get("full_rows", 0))
    return (
        f"- Checks ({mode['mode']}): {mode['queries']} questions, {c.get('rows', 0)} preview rows,"
        f" {c.get('full_rows', 0)} full rows ({c.get('full_rows_not_matching_corpus', 0)} not"
        f" equal to the stored text), {c.get('trimmed_rows_not_in_full_response', 0)} trimmed"
        f" rows missing from the full response, {c.get('budget_spent', 0)} full_content budgets"
        f" spent, {c.get('fetched_rows_not_truncated', 0)} of {c.get('fetched_rows', 0)} fetched"
        f" rows were not trimmed, mean JSON chars per row besides content"
        f" {c.get('full_rows_json_chars_besides_content', 0) / rows:.0f},"
        f" {sum(mode['failures'].values())} failed calls,"
        f" {c.get('not_run_time_limit', 0)} questions not run (time limit)."
    )


def judge_line(mode: dict[str, Any]) -> str:
    """The lexical-judge proxy: evidence row picked from previews vs full texts."""
    j = mode["proxy_lexical_judge"]
    n = j.get("eligible", 0)
    parts = [
        f"{name} top-1 {pct(j.get(f'{name}_top1', 0) / n if n else None)},"
        f" top-2 {pct(j.get(f'{name}_top2', 0) / n if n else None)}"
        for name in ("previews", "previews+excerpts", "full", "service")
        if f"{name}_top1" in j
    ]
    return (
        f"- Lexical judge ({mode['mode']}, {n} questions whose evidence row came back):"
        f" BM25 over the 10 rows picks an evidence row from {'; from '.join(parts)}."
    )


def corpus_table(corpus: dict[str, Any]) -> list[str]:
    """Stored memories per kind: counts and length statistics, then the histogram."""
    columns = ["Memories", "Count", "Mean chars", "p50", "p95", "Min", "Max", "Total chars"]
    rows = [
        [
            kind,
            corpus[kind]["count"],
            *(f"{corpus[kind][k]:,.0f}" for k in ("mean", "p50", "p95", "min", "max")),
            f"{corpus[kind]['total_chars']:,}",
        ]
        for kind in ("long", "short")
    ]
    histogram = ", ".join(f"{k}: {v}" for k, v in corpus["histogram"].items())
    return [*table(columns, "l" + "r" * 7, rows), "", f"Length histogram (chars): {histogram}."]


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    m, o = results["machine"], results["options"]
    lines = [
        f"{machine_line(m)}. {o['conversations']} conversations,"
        f" {o['questions']} questions, limit {o['limit']}, preview {o['preview_chars']} chars,"
        f" service code snapshot {results['code']}, {results['total_seconds']} s.",
        "",
        *corpus_table(results["corpus"]),
        "",
    ]
    for mode in results["modes"]:
        lines += [*size_table(mode), ""]
    lines += [*saving_table(results["modes"]), "", *shed_table(results)]
    return "\n".join([*lines, "", *proxy_lines(results), *features_markdown(results)]) + "\n"
