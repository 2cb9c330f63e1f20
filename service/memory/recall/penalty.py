"""The episode-boundary penalty (docs/tools.md, "Episode boundary penalty"): rows older than the
newest episode in scope lose weight, and a penalised fused list is re-sorted."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from service.memory.recall.candidate import Candidate, hybrid_of, rrf_of, rsf_of, sorted_desc
from service.memory.recall.time import as_utc, hours, parse_timestamp


def episode_penalty_factor(
    timestamp: str,
    boundary: datetime | None,
    rate: float = 0.01,
    floor: float = 0.5,
) -> float:
    """The episode-boundary factor of one row's timestamp.

    1.0 with no boundary, an empty or unparseable timestamp, or a timestamp at or after the
    boundary; otherwise ``max(floor, exp(-rate * hours_before))`` (floor reached at about
    69.3 h with the defaults). Weakens memories from before the newest episode, i.e. from
    earlier sessions, so current-session rows take precedence.
    """
    if boundary is None:
        return 1.0
    moment = parse_timestamp(timestamp)
    edge = as_utc(boundary)
    if moment is None or moment >= edge:
        return 1.0
    return max(floor, math.exp(-rate * hours(edge - moment)))


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _resort_fused(rows: list[Candidate]) -> list[Candidate]:
    """Re-sort by hybrid, else rrf, else rsf, if every non-profile row has it;
    profiles sink."""
    scored = [row for row in rows if not row.is_profile]
    if not scored:
        return rows
    for signal in (hybrid_of, rrf_of, rsf_of):
        if all(signal(row) is not None for row in scored):
            return sorted_desc(rows, signal)
    return rows


def apply_episode_penalty(
    rows: Sequence[Candidate],
    boundary: datetime | None,
    *,
    rate: float = 0.01,
    floor: float = 0.5,
    confidence_enabled: bool = False,
) -> list[Candidate]:
    """Multiply each non-episode row's cosine, rrf, rsf and hybrid by its factor.

    Episode rows are exempt; the profile has no timestamp and so gets 1.0. If any row was
    penalised and confidence is off (confidence re-sorts later anyway), a fused list is
    re-sorted so the penalty actually changes the order; cascade lists, where some rows have
    no fusion score, keep their stage order.
    """
    if boundary is None:
        return list(rows)
    factors = [
        1.0 if row.kind == "ep" else episode_penalty_factor(row.timestamp, boundary, rate, floor)
        for row in rows
    ]
    out = [_penalised(row, factor) for row, factor in zip(rows, factors, strict=True)]
    if min(factors, default=1.0) < 1.0 and not confidence_enabled:
        return _resort_fused(out)
    return out


def _penalised(row: Candidate, factor: float) -> Candidate:
    """The row with every fusion-relevant score it has multiplied by ``factor``."""
    if factor >= 1.0:
        return row
    return replace(
        row,
        cosine=_scaled(row.cosine, factor),
        rrf=_scaled(row.rrf, factor),
        rsf=_scaled(row.rsf, factor),
        hybrid=_scaled(row.hybrid, factor),
    )
