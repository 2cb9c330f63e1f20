"""Timestamp checks: unparsed caller timestamps, mixed conventions (UTC, another
offset, no offset) in memories and episodes, and episodes without a start time.

ISO strings only sort correctly within one convention, and recall orders and
windows by them. Repairs are lossless: an aware timestamp is rewritten as the same
instant in UTC; a naive one stays as it is (its zone is unknowable), and an
unparseable one is replaced by the row's created_at, which is what recall would
have used instead.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Literal

from service.db.health import records as records_queries
from service.db.pool import Connection
from service.memory import text
from service.memory.health.base import Findings, Repairs, Scope

Form = Literal["utc", "aware", "naive", "unparseable"]


def _parsed(value: str) -> datetime | None:
    candidate = value.strip()
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(candidate)
    except ValueError:
        return None


def classify(value: str) -> Form:
    """The convention of one ISO timestamp string."""
    parsed = _parsed(value)
    if parsed is None:
        return "unparseable"
    if parsed.tzinfo is None:
        return "naive"
    return "utc" if parsed.utcoffset() == timedelta(0) else "aware"


def to_utc(value: str) -> str | None:
    """An aware timestamp as the same instant in UTC (``+00:00``); None otherwise."""
    parsed = _parsed(value)
    if parsed is None or parsed.tzinfo is None or parsed.utcoffset() == timedelta(0):
        return None
    return parsed.astimezone(UTC).isoformat()


async def invalid_timestamp(conn: Connection, scope: Scope) -> Findings | None:
    """Caller timestamps that were never parsed (written before parsing, or by hand)."""
    rows = await records_queries.health_unparsed_timestamps(conn, scope.tenant_id, scope.agent)
    if not rows:
        return None
    writable = [row for row in rows if not row.locked]
    return {
        "type": "invalid_timestamp",
        "count": len(rows),
        "reparsable": sum(1 for row in writable if text.parse_timestamp(row.text)),
        "repairable": len(writable),
    }


async def fix_invalid_timestamp(conn: Connection, scope: Scope) -> Repairs:
    """Parse what parses (the text stays); replace the rest with created_at."""
    rows = await records_queries.health_unparsed_timestamps(conn, scope.tenant_id, scope.agent)
    writable = [row for row in rows if not row.locked]
    times = [text.parse_timestamp(row.text) for row in writable]
    texts = [row.text if at is not None else None for row, at in zip(writable, times, strict=True)]
    fixed = await records_queries.health_repair_timestamps(
        conn, scope.tenant_id, [row.id for row in writable], texts, times
    )
    reparsed = sum(1 for at in times if at is not None)
    return Repairs(fixed=fixed, reparsed=reparsed, replaced=fixed - reparsed)


async def timestamp_format_drift(conn: Connection, scope: Scope) -> Findings | None:
    forms = await records_queries.health_timestamp_formats(conn, scope.tenant_id, scope.agent)
    present = sum(1 for count in (forms.utc, forms.aware, forms.naive) if count)
    if present <= 1 and forms.aware == 0:
        return None
    issue: Findings = {
        "type": "timestamp_format_drift",
        "utc": forms.utc,
        "aware": forms.aware,
        "naive": forms.naive,
        "repairable": forms.repairable,
    }
    if forms.locked_aware:
        issue["unfixable_locked"] = forms.locked_aware
    if forms.naive:
        issue["unfixable_naive"] = forms.naive
    return issue


async def fix_timestamp_format_drift(conn: Connection, scope: Scope) -> Repairs:
    normalized = await records_queries.health_normalise_timestamps(
        conn, scope.tenant_id, scope.agent
    )
    return Repairs(fixed=normalized, normalized=normalized)


def _episode_repairs(
    rows: list[records_queries.EpisodeTimes],
) -> tuple[Counter[Form], list[tuple[int, str | None, str | None]]]:
    forms: Counter[Form] = Counter()
    repairs: list[tuple[int, str | None, str | None]] = []
    for row in rows:
        values = [value for value in (row.start_time, row.end_time) if value]
        forms.update(classify(value) for value in values)
        start = to_utc(row.start_time) if row.start_time else None
        end = to_utc(row.end_time) if row.end_time else None
        if start is not None or end is not None:
            repairs.append((row.id, start, end))
    return forms, repairs


async def episode_timestamp_format_drift(conn: Connection, scope: Scope) -> Findings | None:
    """The same drift in episodes' start_time/end_time (counted per value)."""
    rows = await records_queries.health_episode_times(conn, scope.tenant_id, scope.agent)
    forms, repairs = _episode_repairs(rows)
    parsed = [form for form in ("utc", "aware", "naive") if forms[form]]
    if len(parsed) <= 1 and not repairs:
        return None
    issue: Findings = {
        "type": "episode_timestamp_format_drift",
        "utc": forms["utc"],
        "aware": forms["aware"],
        "naive": forms["naive"],
        "repairable": len(repairs),
    }
    if forms["unparseable"]:
        issue["unparseable"] = forms["unparseable"]
    if forms["naive"]:
        issue["unfixable_naive"] = forms["naive"]
    return issue


async def fix_episode_timestamp_format_drift(conn: Connection, scope: Scope) -> Repairs:
    rows = await records_queries.health_episode_times(conn, scope.tenant_id, scope.agent)
    _, repairs = _episode_repairs(rows)
    if not repairs:
        return Repairs(fixed=0, normalized=0)
    ids, starts, ends = zip(*repairs, strict=True)
    normalized = await records_queries.health_set_episode_times(
        conn, scope.tenant_id, ids, starts, ends
    )
    return Repairs(fixed=normalized, normalized=normalized)


async def missing_episode_start_time(conn: Connection, scope: Scope) -> Findings | None:
    """Episodes without a start time (read paths fall back to created_at already)."""
    missing = await records_queries.health_missing_start_times(conn, scope.tenant_id, scope.agent)
    if missing == 0:
        return None
    return {
        "type": "missing_episode_start_time",
        "count": missing,
        "repairable": missing,
        "hint": (
            "fix copies created_at into start_time: when the episode was recorded, an "
            "approximation of when it began, not a recovered truth"
        ),
    }


async def fix_missing_episode_start_time(conn: Connection, scope: Scope) -> Repairs:
    return Repairs(
        fixed=await records_queries.health_fill_start_times(conn, scope.tenant_id, scope.agent)
    )
