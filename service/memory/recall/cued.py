"""A recall's time cue at work (docs/tools.md, "Time cues"): the cue arm and what it
does to an answer the gate, autocut and the ``limit`` cut have already decided.

The cue arm runs after the ordinary arms, on their query vector (never a second
embedding), in one statement per stage (``recall_cue``): at most two stages, the second
only when the first found nothing, the cue can widen, and the recall has taken less than
``CPERSONA_RECALL_CUE_TIME_LIMIT_MS``. Its rows reorder the answer by a bounded lift and
fill a few held seats; no score, gate decision or ``recall_count`` credit depends on it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Final

from service.db import recall as recall_queries, recall_cue
from service.memory.library import Library
from service.memory.recall import cue, exclusion, query_terms
from service.memory.recall.candidate import HeldReason, Identity, Kind
from service.memory.recall.records import CueApplied, CueIgnored, Recalled
from service.memory.recall.time import parse_timestamp
from service.models import JsonObject, TenantId

CHANNELS: Final = ("cue_vector", "cue_text", "cue_recent", "cue_episode_vector", "cue_episode_text")
"""The cue arm's lists in merge order (``recall_cue``'s channels): a tie of reciprocal-rank
votes goes to the row a list earlier in this order found first, so equal data and calls
give equal answers."""


@dataclasses.dataclass(frozen=True, slots=True)
class CueArm:
    """What the cue arm searches with, besides the period: the recall's scope and terms,
    the ordinary arm's query vector (None: keyword and full text only) and the cosine
    floor, whether episodes are eligible, the excluded texts, and when the recall started
    (``time.perf_counter``), which bounds the widening."""

    scope: recall_queries.Scope
    terms: query_terms.Terms
    query: str
    vector: Sequence[float] | None
    floor: float
    episodes: bool
    exclusions: Collection[str]
    started: float


@dataclasses.dataclass(frozen=True, slots=True)
class CueFound:
    """The cue arm's rows best first (merged by reciprocal rank, ``cue.DEPTH`` at most)
    and the stage facts of the answer's ``time_cue``."""

    rows: tuple[recall_queries.Hit, ...]
    report: CueApplied


def span_of(meta: JsonObject) -> cue.Span:
    """The scope's memory time span from the lexical statement's meta row."""
    oldest, newest = meta.get("span_oldest"), meta.get("span_newest")
    return cue.Span(
        parse_timestamp(oldest) if isinstance(oldest, str) else None,
        parse_timestamp(newest) if isinstance(newest, str) else None,
    )


def _identity(hit: recall_queries.Hit) -> Identity:
    return ("ep" if hit.kind == "ep" else "mem", hit.id)


def _merged(
    hits: Sequence[recall_queries.Hit], exclusions: Collection[str]
) -> tuple[recall_queries.Hit, ...]:
    """The arm's lists (one per channel, in channel order) merged by reciprocal rank;
    an excluded row keeps its place in its list and gets no vote."""
    ordered = sorted(hits, key=lambda h: h.position)
    lists = [[h for h in ordered if h.channel == channel] for channel in CHANNELS]
    by_identity = {_identity(h): h for h in hits}
    keys = [
        [None if exclusion.excluded(h.content, exclusions) else _identity(h) for h in ranked]
        for ranked in lists
    ]
    return tuple(by_identity[key] for key in cue.reciprocal_rank(keys))


async def _stage(
    lib: Library, tenant_id: TenantId, arm: CueArm, window: cue.Period
) -> tuple[recall_queries.Hit, ...]:
    search = recall_cue.CueSearch(
        start=window[0],
        end=window[1],
        vector=arm.vector if arm.query.strip() else None,
        floor=arm.floor,
        tsquery=arm.terms.tsquery,
        lexemes=arm.terms.lexemes,
        patterns=arm.terms.patterns,
        recency=not arm.query.strip(),
        episodes=arm.episodes,
        depth=cue.DEPTH,
    )
    async with lib.db.tenant_tx(tenant_id) as conn:
        hits = await recall_cue.cue_candidates(conn, tenant_id, arm.scope, search)
    return _merged(hits, arm.exclusions)


async def search(
    lib: Library, tenant_id: TenantId, time_cue: cue.TimeCue, arm: CueArm, span: cue.Span
) -> CueFound | CueIgnored:
    """The cue arm's rows for ``time_cue``, or the note that the cue is ignored (its own
    period starts within the last 24 hours). A period that holds nothing is widened once,
    one confidence step, while the recall is within the time limit."""
    now = datetime.now(UTC)
    recent = cue.recent_only(time_cue, now, span)
    if recent is not None:
        return CueIgnored(recent)
    confidence, revised = time_cue.confidence, False
    while True:
        window = cue.period(time_cue, confidence, now, span)
        rows = await _stage(lib, tenant_id, arm, window) if window is not None else ()
        wider = cue.WIDER[confidence]
        if rows or revised or wider is None or not _within_limit(lib, arm.started):
            return CueFound(rows, CueApplied(window, confidence, revised))
        confidence, revised = wider, True


def _within_limit(lib: Library, started: float) -> bool:
    elapsed_ms = (time.perf_counter() - started) * 1000
    return elapsed_ms < lib.settings.recall_cue_time_limit_ms


def _ranked(row: Recalled, ranks: dict[Identity, int]) -> Recalled:
    """``row`` with ``match_reason.cue_rank`` when the cue arm found it too."""
    rank = ranks.get((row.kind, row.id))
    if rank is None or row.match_reason is None or row.match_reason["signal"] == "cue":
        return row
    return dataclasses.replace(row, match_reason={**row.match_reason, "cue_rank": rank})


def _seat(hit: recall_queries.Hit, rank: int) -> Recalled:
    """A cue-arm row held beside the answer: never gated, never credited."""
    kind: Kind = "ep" if hit.kind == "ep" else "mem"
    reason: HeldReason = {"signal": "cue", "admission": "reservation", "cue_rank": rank}
    return Recalled(
        kind=kind,
        id=hit.id,
        ref=f"{kind}:{hit.id}",
        content=hit.content,
        source=hit.source if isinstance(hit.source, dict) else {},
        timestamp=hit.timestamp or "",
        msg_id=hit.msg_id or "",
        confidence=None,
        match_reason=reason,
    )


def apply(
    rows: Sequence[Recalled],
    found: CueFound,
    reached: Collection[Identity],
    admitted: Collection[Identity],
) -> tuple[tuple[Recalled, ...], CueApplied]:
    """The answer ``rows`` (best first, after the ``limit`` cut) with the cue applied:
    the rows the cue arm found moved up by at most ``LIFT`` places, then up to ``SEATS``
    held rows appended (the weak end of the wire order): the best cue-arm rows the answer
    does not hold that no ordinary arm reached (``reached``) or that the gate and autocut
    admitted and the cut left out (``admitted``). A row the gate refused is never seated."""
    confidence = found.report.confidence
    ranks = {_identity(hit): rank for rank, hit in enumerate(found.rows)}
    lifted, moved = cue.lift(rows, ranks, cue.LIFT[confidence], lambda r: (r.kind, r.id))
    present = {(row.kind, row.id) for row in rows}
    eligible = [
        hit
        for hit in found.rows
        if _identity(hit) not in present
        and (_identity(hit) not in reached or _identity(hit) in admitted)
    ]
    seats = [_seat(hit, ranks[_identity(hit)]) for hit in eligible[: cue.SEATS[confidence]]]
    out = tuple(_ranked(row, ranks) for row in lifted) + tuple(seats)
    return out, dataclasses.replace(found.report, moved=moved, seated=len(seats))
