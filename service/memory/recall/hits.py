"""Recall rows: storage hits → scoring candidates per channel → recalled rows.

Pure functions. A candidate keeps only what ranking needs; the hit it came
from keeps what the recalled row needs (source, msg_id), looked up by identity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from service.db.recall import Hit
from service.memory.recall import candidate, exclusion, fusion, rank
from service.memory.recall.confidence import Confidence
from service.memory.recall.records import Recalled
from service.memory.recall.rerank import TextFeatures
from service.models import JsonObject

PROFILE_SOURCE = {"System": "profile"}


@dataclasses.dataclass(frozen=True, slots=True)
class Pool:
    """The three channels (docs/tools.md, "Fusion modes"; holes = excluded rows) and the hits by
    identity."""

    vector: candidate.Channel
    episode_text: candidate.Channel
    keyword: candidate.Channel
    rows: dict[candidate.Identity, Hit]


def _candidate(hit: Hit) -> candidate.Candidate:
    kind: candidate.Kind = "ep" if hit.kind == "ep" else "mem"
    signal = hit.score
    return candidate.Candidate(
        kind=kind,
        id=hit.id,
        content=hit.content,
        timestamp=hit.timestamp,
        created_at=hit.created_at,
        cosine=signal if hit.channel == "vector" else None,
        lexical=signal if hit.channel in ("memory_text", "episode_text") else None,
        resolved=bool(hit.resolved),
        recall_count=hit.recall_count,
        last_recalled_at=hit.last_recalled_at,
        matched=hit.matched or hit.channel in ("memory_text", "episode_text", "keyword"),
    )


def _vector_channel(hits: Sequence[Hit], min_similarity: float, limit: int) -> list[Hit]:
    """Vector hits over the threshold, memories and episodes, best ``limit``
    (docs/tools.md, "Retrievers").

    Ties: memories before episodes, newer before older.
    """
    kept = [h for h in hits if h.channel == "vector" and (h.score or 0.0) >= min_similarity]
    kept.sort(key=lambda h: (-(h.score or 0.0), h.kind != "mem", -h.created_at.timestamp()))
    return kept[:limit]


def _channel(
    hits: Sequence[Hit], exclusions: Collection[str], excludable: bool
) -> candidate.Channel:
    candidates = [_candidate(hit) for hit in hits]
    if not excludable or not exclusions:
        return candidates
    return fusion.mark_excluded(candidates, lambda c: exclusion.excluded(c.content, exclusions))


def channels_from(
    hits: Sequence[Hit], exclusions: Collection[str], min_similarity: float, limit: int
) -> Pool:
    """Build the channels; exclusions apply to vector and memory-keyword rows only."""
    by_position = sorted(hits, key=lambda h: h.position)
    keyword = [h for h in by_position if h.channel in ("memory_text", "keyword", "recent")]
    episodes = [h for h in by_position if h.channel == "episode_text"]
    vector = _vector_channel(by_position, min_similarity, limit)
    return Pool(
        vector=_channel(vector, exclusions, True),
        episode_text=_channel(episodes, exclusions, False),
        keyword=_channel(keyword[:limit], exclusions, True),
        rows={(("ep" if h.kind == "ep" else "mem"), h.id): h for h in hits},
    )


def profile_candidate(profile: str) -> candidate.Candidate:
    return candidate.Candidate(
        kind="profile", id=candidate.PROFILE_ID, content=f"[Profile] {profile}"
    )


def _source(hit: Hit | None, row: candidate.Candidate) -> JsonObject:
    if row.kind == "profile":
        return dict(PROFILE_SOURCE)
    if hit is None or not isinstance(hit.source, dict):
        return {}
    return hit.source


def stored_cosines(hits: Sequence[Hit]) -> dict[candidate.Identity, float]:
    """Each hit's stored-embedding cosine with the query (for the backfill of
    docs/tools.md, "Confidence scoring")."""
    return {
        ("ep" if h.kind == "ep" else "mem", h.id): h.cosine for h in hits if h.cosine is not None
    }


def text_features(hits: Sequence[Hit]) -> dict[candidate.Identity, TextFeatures]:
    """Each hit's second-stage text features as the retrieval computed them."""
    return {
        ("ep" if h.kind == "ep" else "mem", h.id): TextFeatures(h.coverage, h.phrase) for h in hits
    }


def message(
    row: candidate.Candidate,
    rows: dict[candidate.Identity, Hit],
    confidence: Confidence | None = None,
) -> Recalled:
    """One recalled row (docs/tools.md, "Recall rows"), full content."""
    hit = rows.get(row.identity)
    return Recalled(
        kind=row.kind,
        id=row.id,
        ref=f"{row.kind}:{row.id}" if row.kind != "profile" and row.id > 0 else None,
        content=row.content,
        source=_source(hit, row),
        timestamp=row.timestamp or "",
        msg_id=hit.msg_id if hit is not None and hit.msg_id else "",
        confidence=confidence,
        match_reason=rank.match_reason(row),
        passage=None if hit is None else hit.passage,
    )
