"""Token-economy tallies: what one mode measured, query by query, and its summaries (pure)."""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench.economy.corpus import PREVIEW_CHARS, Memory, Placement
from bench.economy.estimates import Measures, saving, shed
from bench.economy.features import Features, summarise_features
from bench.harness.stats import describe

SHED_CLAIM = 0.60
RESPONSE_KEYS = (
    "previews",
    "full_content",
    "previews+get_contents",
    "previews+get_contents_trimmed",
    "get_contents",
)
COMPARED = ("previews", "previews+get_contents", "previews+get_contents_trimmed")


@dataclasses.dataclass
class Tally:
    """Everything measured in one mode, accumulated query by query."""

    sizes: dict[str, list[dict[str, int]]] = dataclasses.field(
        default_factory=lambda: {name: [] for name in RESPONSE_KEYS}
    )
    has_long: list[bool] = dataclasses.field(default_factory=list)
    row_shed: list[dict[str, float]] = dataclasses.field(default_factory=list)
    evidence: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    questions: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    counts: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    failures: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    judge: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    features: Features = dataclasses.field(default_factory=Features)


@dataclasses.dataclass(frozen=True)
class Context:
    """What a worker needs: the corpus by agent and the size measures."""

    corpus: Mapping[str, Mapping[str, Memory]]
    placement: Mapping[str, Placement]
    measures: Measures


# --------------------------------------------------------------------------- one query


def record(
    tally: Tally,
    sizes: Mapping[str, dict[str, int]],
    rows: Sequence[Mapping[str, Any]],
    refs: Sequence[str],
) -> None:
    """Fold one question's response sizes into ``tally``."""
    for name, size in sizes.items():
        tally.sizes[name].append(size)
    tally.has_long.append(any(r.get("content_truncated") for r in rows))
    tally.counts["rows"] += len(rows)
    tally.counts["fetched_rows"] += len(refs)
    tally.counts["fetched_rows_not_truncated"] += sum(
        not r.get("content_truncated") for r in rows if r.get("ref") in refs
    )


def row_sheds(
    preview_rows: Sequence[Mapping[str, Any]], full_rows: Sequence[Mapping[str, Any]], ctx: Context
) -> list[dict[str, float]]:
    """For each trimmed row, the share it sheds: content chars and whole-row JSON by measure."""
    full_by_ref = {r.get("ref"): r for r in full_rows if r.get("ref")}
    out = []
    for row in preview_rows:
        full = full_by_ref.get(row.get("ref"))
        if not row.get("content_truncated") or full is None:
            continue
        item = {
            "content_len": float(row["content_len"]),
            "content_chars": shed(len(str(row["content"])), int(row["content_len"])),
        }
        small = json.dumps(row, ensure_ascii=False)
        big = json.dumps(full, ensure_ascii=False)
        for name in ("chars", "tokens_chars4", "tokens_wordpiece", "tokens_minilm"):
            if name in ctx.measures:
                fn = ctx.measures[name]
                item[f"row_{name}"] = shed(fn(small), fn(big))
        out.append(item)
    return out


def check_integrity(
    sample: str, rows: Sequence[Mapping[str, Any]], ctx: Context, tally: Tally
) -> None:
    """Count full rows whose content is not exactly the text that was stored, and the JSON
    characters a row carries besides its content (what a preview cannot shed)."""
    for row in rows:
        memory = ctx.corpus[sample].get(str(row.get("id", "")))
        tally.counts["full_rows"] += 1
        tally.counts["full_rows_not_matching_corpus"] += 0
        content = json.dumps(row.get("content", ""), ensure_ascii=False)
        tally.counts["full_rows_json_chars_besides_content"] += len(
            json.dumps(row, ensure_ascii=False)
        ) - len(content)
        if memory is None or memory.content != row.get("content"):
            tally.counts["full_rows_not_matching_corpus"] += 1


# --------------------------------------------------------------------------- summaries


def summarise_sizes(rows: Sequence[Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """Per measure: count, mean, p50, p95, min, max over queries."""
    names = rows[0].keys() if rows else ()
    return {name: describe([r[name] for r in rows]) for name in names}


def savings(tally: Tally, subset: Sequence[bool]) -> dict[str, dict[str, float | None]]:
    """Per measure: how much each preview-based response saves against full_content."""
    picked = {
        mode: [r for r, keep in zip(rows, subset, strict=True) if keep]
        for mode, rows in tally.sizes.items()
    }
    names = picked["full_content"][0].keys() if picked["full_content"] else ()
    out: dict[str, dict[str, float | None]] = {}
    for name in names:
        full = [r[name] for r in picked["full_content"]]
        out[name] = {"queries": len(full)} | {
            f"{mode}_vs_full": saving([r[name] for r in picked[mode]], full) for mode in COMPARED
        }
    return out


def summarise_rows(sheds: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Row-level shedding of trimmed rows: distributions and the share meeting the claim."""
    names = sorted({k for s in sheds for k in s if k != "content_len"})
    out: dict[str, Any] = {"trimmed_rows": len(sheds)}
    for name in names:
        values = [s[name] for s in sheds if name in s]
        out[name] = describe(values, 4) | {
            "share_meeting_60pct": round(sum(v >= SHED_CLAIM for v in values) / len(values), 4)
        }
    return out


def summarise(tally: Tally) -> dict[str, Any]:
    """The JSON summary of one mode."""
    everything = [True] * len(tally.has_long)
    return {
        "queries": len(tally.has_long),
        "sizes": {mode: summarise_sizes(rows) for mode, rows in tally.sizes.items()},
        "savings": {
            "all": savings(tally, everything),
            "with_long_row": savings(tally, tally.has_long),
        },
        "queries_with_long_row": sum(tally.has_long),
        "rows": summarise_rows(tally.row_shed),
        "proxy_in_response": {
            "evidence_turns": dict(tally.evidence),
            "questions": dict(tally.questions),
        },
        "proxy_lexical_judge": dict(tally.judge),
        "features": summarise_features(tally.features),
        "counts": dict(tally.counts),
        "failures": dict(tally.failures),
    }


def corpus_sheds(memories: Iterable[Memory], measures: Measures) -> dict[str, Any]:
    """Every stored memory over ``PREVIEW_CHARS``: the share of its content a preview sheds."""
    long_rows = [m.content for m in memories if len(m.content) > PREVIEW_CHARS]
    sheds = []
    for content in long_rows:
        cut = content[:PREVIEW_CHARS]
        item = {
            name: shed(fn(cut), fn(content))
            for name, fn in measures.items()
            if name != "utf8_bytes"
        }
        sheds.append({"content_len": float(len(content)), **item})
    return summarise_rows(sheds)
