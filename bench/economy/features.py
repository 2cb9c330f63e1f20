"""What the response-economy features change, measured from the client's side (pure).

- **Content share** of a default answer: the characters of memory text it carries
  (``content`` and ``excerpt`` strings of its rows) over the characters of the whole
  tool result text; the rest is framing (keys, refs, scores, timestamps, markers).
- **Evidence visibility**: where an evidence turn of a returned long row lies against
  what the answer shows of that row — the preview and, when there is one, the excerpt.
  ``wholly`` (inside the preview or inside the excerpt), ``fills`` (a turn longer than
  the excerpt, which lies entirely inside it), ``partly`` (some of it shown) or
  ``hidden``. Beside it the **ceiling**: whether a perfect locator could show the turn
  whole at all with the preview and one excerpt of ``LONGEST_EXCERPT`` (a turn that begins
  in the preview needs its rest to fit, one beyond it needs all of it to fit).
- **Budget pages**: one ``recall(max_tokens=B)`` followed through its cursors.
- **Sessions**: consecutive questions asked in one session with ``novel_only``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from bench.economy.corpus import Span
from bench.harness.stats import describe

VISIBILITY = ("wholly", "fills", "partly", "hidden")


def text_chars(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(content characters, excerpt characters) of an answer's rows."""
    content = sum(len(r["content"]) for r in rows if isinstance(r.get("content"), str))
    excerpt = sum(len(r["excerpt"]) for r in rows if isinstance(r.get("excerpt"), str))
    return content, excerpt


def visibility(span: Span, row: Mapping[str, Any]) -> str:
    """How much of the turn ``span`` a row shows (see the module docstring). An excerpt
    that starts where the preview ends continues it."""
    shown = len(str(row.get("content", "")))
    offset, text = row.get("excerpt_offset"), row.get("excerpt")
    excerpt = None
    if isinstance(offset, int) and isinstance(text, str):
        excerpt = (offset, offset + len(text))
    regions = [(0, shown)]
    if excerpt is not None:
        regions = [(0, max(shown, excerpt[1]))] if excerpt[0] <= shown else [*regions, excerpt]
    if any(a <= span.start and span.end <= b for a, b in regions):
        return "wholly"
    if excerpt is not None and span.start <= excerpt[0] and excerpt[1] <= span.end:
        return "fills"
    if any(span.start < b and a < span.end for a, b in regions):
        return "partly"
    return "hidden"


def could_be_wholly_visible(span: Span, shown: int, excerpt_chars: int) -> bool:
    """Whether a preview of ``shown`` characters plus one excerpt of at most
    ``excerpt_chars`` can show the turn ``span`` whole (the ceiling of any excerpt)."""
    return span.end - max(span.start, shown) <= excerpt_chars


def judge_text(row: Mapping[str, Any]) -> str:
    """What a reader sees of a row: its preview and its excerpt."""
    return f"{row.get('content', '')}\n{row.get('excerpt', '')}"


@dataclasses.dataclass
class Features:
    """Feature measurements of one mode, accumulated query by query."""

    chars: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    fields: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    visible: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    ceiling: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    pages: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    sessions: list[dict[str, int]] = dataclasses.field(default_factory=list)
    default_tokens: dict[tuple[str, int], tuple[int, int]] = dataclasses.field(
        default_factory=dict
    )  # per question: (previews, previews + get_contents of the trimmed top two)
    counts: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)


def field_chars(key: str, value: object) -> int:
    """Characters of ``"key":value,`` in the compact rendering."""
    return len(json.dumps({key: value}, ensure_ascii=False, separators=(",", ":")))


def record_answer(features: Features, text: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Fold one default answer's characters into the content share, and where the
    characters that are not memory text go, field by field."""
    for row in rows:
        for key, value in row.items():
            features.fields[key] += field_chars(key, value) - 1
    content, excerpt = text_chars(rows)
    features.chars["response"] += len(text)
    features.chars["content"] += content
    features.chars["excerpt"] += excerpt
    features.chars["rows"] += len(rows)
    features.chars["trimmed_rows"] += sum(bool(r.get("content_truncated")) for r in rows)
    features.chars["excerpts"] += sum(isinstance(r.get("excerpt"), str) for r in rows)


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def summarise_features(features: Features) -> dict[str, Any]:
    """The JSON summary of one mode's feature measurements."""
    c = features.chars
    seen = sum(features.visible.values())
    out: dict[str, Any] = {
        "content_share": share(c["content"], c["response"]),
        "memory_text_share": share(c["content"] + c["excerpt"], c["response"]),
        "chars": dict(c),
        "field_chars": dict(features.fields),
        "evidence_visibility": dict(features.visible),
        "evidence_visible_wholly": share(features.visible["wholly"], seen),
        "evidence_visible_wholly_or_fills": share(
            features.visible["wholly"] + features.visible["fills"], seen
        ),
        "evidence_visible_at_least_partly": share(seen - features.visible["hidden"], seen),
        "evidence_visible_wholly_ceiling": share(features.ceiling["possible"], seen),
        "counts": dict(features.counts),
    }
    if features.pages:
        out["budget"] = summarise_pages(features.pages)
    if features.sessions:
        out["sessions"] = summarise_sessions(features.sessions)
    return out


def summarise_pages(pages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Budgeted recalls followed through their cursors: page counts and sizes, checks."""
    every = [size for p in pages for size in p["page_tokens"]]
    return {
        "recalls": len(pages),
        "pages": describe([len(p["page_tokens"]) for p in pages], 2),
        "page_tokens": describe(every, 1),
        "first_page_tokens": describe([p["page_tokens"][0] for p in pages], 1),
        "first_page_rows": describe([p["first_rows"] for p in pages], 2),
        "total_tokens": describe([sum(p["page_tokens"]) for p in pages], 1),
        "cursor_chars": describe([c for p in pages for c in p["cursor_chars"]], 1),
        "pages_over_budget_with_more_than_one_row": sum(p["over_budget"] for p in pages),
        "recalls_whose_pages_differ_from_the_unbudgeted_order": sum(
            not p["same_order"] for p in pages
        ),
    }


def summarise_sessions(sessions: Sequence[Mapping[str, int]]) -> dict[str, Any]:
    """Sessions of consecutive questions with ``novel_only``: tokens against the same
    questions asked on their own, recalls alone and recalls followed by ``get_contents``
    of the trimmed top two; and how many rows came back as stubs."""
    out: dict[str, Any] = {
        "sessions": len(sessions),
        "recalls": sum(s["recalls"] for s in sessions),
        "stubs": sum(s["stubs"] for s in sessions),
        "rows": sum(s["rows"] for s in sessions),
    }
    for name in ("recall", "recall+fetch"):
        plain = sum(s[f"{name}_plain"] for s in sessions)
        novel = sum(s[f"{name}_novel"] for s in sessions)
        out[name] = {
            "tokens_without_ledger": describe([s[f"{name}_plain"] for s in sessions], 1),
            "tokens_with_ledger": describe([s[f"{name}_novel"] for s in sessions], 1),
            "saving": share(plain - novel, plain),
        }
    return out
