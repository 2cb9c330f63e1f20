"""The response-economy part of the token report: before/after and each feature (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.economy.paging import BUDGET, SESSION_QUESTIONS
from bench.harness.markdown import pct, table


def _mean(mode: Mapping[str, Any], shape: str, stat: str = "mean") -> str:
    return f"{mode['sizes'][shape]['tokens_chars4'][stat]:,.0f}"


def _judge(mode: Mapping[str, Any], name: str) -> str:
    j = mode["proxy_lexical_judge"]
    n = j.get("eligible", 0)
    return pct(j.get(f"{name}_top2", 0) / n if n else None)


MEASURES: tuple[tuple[str, Any], ...] = (
    ("default recall, mean tokens (c/4)", lambda m: _mean(m, "previews")),
    ("default recall, p95 tokens (c/4)", lambda m: _mean(m, "previews", "p95")),
    ("content share of the answer text", lambda m: pct(m["features"]["content_share"])),
    ("memory text share (content + excerpt)", lambda m: pct(m["features"]["memory_text_share"])),
    (
        "long-row evidence wholly visible (preview or excerpt)",
        lambda m: pct(m["features"]["evidence_visible_wholly"]),
    ),
    (
        "… wholly visible or filling the excerpt",
        lambda m: pct(m["features"]["evidence_visible_wholly_or_fills"]),
    ),
    (
        "… at least partly visible",
        lambda m: pct(m["features"]["evidence_visible_at_least_partly"]),
    ),
    (
        "… the most any excerpt could show wholly (ceiling)",
        lambda m: pct(m["features"].get("evidence_visible_wholly_ceiling")),
    ),
    ("lexical judge top-2 from what the answer shows", lambda m: _judge(m, "previews+excerpts")),
    ("lexical judge top-2 from full texts", lambda m: _judge(m, "full")),
    ("previews + get_contents(top 2), mean tokens", lambda m: _mean(m, "previews+get_contents")),
    ("full_content, mean tokens", lambda m: _mean(m, "full_content")),
)


def before_after(results: Mapping[str, Any]) -> list[str]:
    """One table per mode: the baseline code and this code on the same corpus and run."""
    before = {m["mode"]: m for m in results.get("baseline_modes", [])}
    ref = results.get("baseline", {}).get("ref", "-")
    lines: list[str] = []
    for after in results["modes"]:
        old = before.get(after["mode"])
        rows = []
        for label, value in MEASURES:
            rows.append([label, "-" if old is None else value(old), value(after)])
        columns = ["Measure", f"before ({ref})", "after"]
        lines += [f"Embedding mode `{after['mode']}`:", "", *table(columns, "lrr", rows), ""]
    return lines


def budget_lines(mode: Mapping[str, Any]) -> list[str]:
    b = mode["features"].get("budget")
    if not b:
        return []
    return [
        f"- `max_tokens: {BUDGET}` ({mode['mode']}, {b['recalls']} recalls of limit 10): "
        f"{b['pages']['mean']:.2f} pages per recall (max {b['pages']['max']:.0f}); page "
        f"{b['page_tokens']['mean']:,.0f} tokens mean, p95 {b['page_tokens']['p95']:,.0f}, max "
        f"{b['page_tokens']['max']:,.0f} (next_cursor included: mean "
        f"{b['cursor_chars']['mean']:,.0f} characters); first page "
        f"{b['first_page_rows']['mean']:.1f} rows; pages over the budget with more than one row "
        f"(cursor excluded): {b['pages_over_budget_with_more_than_one_row']}; recalls whose "
        f"pages did not deliver the unbudgeted order exactly: "
        f"{b['recalls_whose_pages_differ_from_the_unbudgeted_order']}.",
    ]


def session_lines(mode: Mapping[str, Any]) -> list[str]:
    s = mode["features"].get("sessions")
    if not s:
        return []
    alone, fetch = s["recall"], s["recall+fetch"]
    return [
        f"- Sessions of {SESSION_QUESTIONS} questions with `novel_only` ({mode['mode']}, "
        f"{s['sessions']} sessions, {s['recalls']} recalls; {s['stubs']} of {s['rows']} rows "
        f"came back as stubs): recalls alone {alone['tokens_with_ledger']['mean']:,.0f} tokens "
        f"a session against {alone['tokens_without_ledger']['mean']:,.0f} without the ledger "
        f"(saving {pct(alone['saving'])}); each recall followed by get_contents of its trimmed "
        f"top two: {fetch['tokens_with_ledger']['mean']:,.0f} against "
        f"{fetch['tokens_without_ledger']['mean']:,.0f} (saving {pct(fetch['saving'])}).",
    ]


def usage_lines(mode: Mapping[str, Any]) -> list[str]:
    report: Sequence[str] = mode.get("usage_report", [])
    if not report:
        return []
    return [
        f"`cpersona-service usage` after the {mode['mode']} run:",
        "",
        "```text",
        *report,
        "```",
        "",
    ]


def field_lines(mode: Mapping[str, Any]) -> list[str]:
    """Where a default answer's characters go, per field (the 'content' field's
    characters beyond its text are its key, quotes and JSON escapes)."""
    f = mode["features"]
    total, rows = f["chars"].get("response", 0), f["chars"].get("rows", 0)
    if not total or not rows or "field_chars" not in f:
        return []
    cells = [
        f"`{key}` {chars / rows:.0f} ({pct(chars / total)})"
        for key, chars in sorted(f["field_chars"].items(), key=lambda kv: -kv[1])
    ]
    return [
        f"- Characters per row of a default answer by field ({mode['mode']}; share of the"
        f" answer text): {', '.join(cells)}; memory text is"
        f" {(f['chars']['content'] + f['chars']['excerpt']) / rows:.0f} a row.",
    ]


def features_markdown(results: Mapping[str, Any]) -> list[str]:
    """Before/after tables, then budgets, sessions and the metered usage."""
    lines = ["", "## Response economy", "", *before_after(results)]
    for mode in results["modes"]:
        lines += [*field_lines(mode), *budget_lines(mode), *session_lines(mode)]
    lines.append("")
    for mode in results["modes"]:
        lines += usage_lines(mode)
    return lines
