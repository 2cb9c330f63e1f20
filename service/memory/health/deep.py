"""deep_check (docs/health.md, "deep_check"): heuristic data-quality checks of one agent.

Each check returns its own result object. Only ``anonymous_source`` (fill the name
from a leading ``[name] ``) and ``short_content`` (delete) act on ``fix``, and never on
locked rows; the rest report. Unknown names are skipped silently, and a check that
crashes yields ``{"error": ...}`` in its slot (inside its own savepoint, so it
cannot undo or block the others). The agent is matched exactly: ``''`` is the name
of the agent that stored with an empty agent_id, nothing else.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TypeAlias

from service.config import Settings
from service.db.health import deep as deep_queries
from service.db.pool import Connection
from service.logs import get_logger
from service.memory import text
from service.memory.library import Library
from service.models import JsonObject, TenantId

log = get_logger(__name__)

SHORT_CONTENT_CHARS = 5
STALE_PROFILE_DAYS = 30
CALIBRATION_STALE_DAYS = 90
CALIBRATION_MIN_EMBEDDED = 50
NEAR_DUPLICATE_COSINE = 0.97
NEAR_DUPLICATE_ROWS = 1000
SCORING_VERSION = "255a3-episode-penalty-exempt"
PAUSE_REASON = "no-persist mode active — fix downgraded to fix=False"
_NAME_PREFIX = re.compile(r"^\[(.+?)\]\s")


@dataclasses.dataclass(frozen=True, slots=True)
class DeepScope:
    tenant_id: TenantId
    agent: str
    settings: Settings
    provider: bool  # an embedding provider is configured


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RecoveredName:
    id: int
    recovered_name: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ContentPreview:
    id: int
    content_preview: str  # the first 60 characters


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AnonymousSources:
    """Sentinel-sourced rows: ``recoverable`` ones start with ``[name] ``. ``fixed`` is
    None unless the run fixed; samples are the first five of each kind."""

    recoverable: int
    unrecoverable: int
    fixed: int | None
    unfixable_locked: int
    samples: tuple[RecoveredName, ...]
    unrecoverable_samples: tuple[ContentPreview, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ShortRow:
    id: int
    content: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ShortContent:
    """Rows shorter than ``SHORT_CONTENT_CHARS``; ``fixed`` (deleted) is None unless the
    run fixed; the first ten as samples."""

    count: int
    fixed: int | None
    samples: tuple[ShortRow, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StaleProfile:
    """Profiles not updated for ``threshold_days``; ``last_updated`` ISO-8601 or None."""

    count: int
    threshold_days: int
    last_updated: str | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeSample:
    id: int
    summary: str  # the first 80 characters
    start: str
    end: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OrphanedEpisodes:
    """Episodes whose time range holds none of the agent's memories; ``unparseable``
    counts episodes whose range does not parse."""

    count: int
    unparseable: int
    samples: tuple[EpisodeSample, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationAge:
    """Whether the agent's recall threshold was calibrated and how long ago; ``status``
    decides which of the other fields are set (None = not reported)."""

    status: str
    reason: str | None = None
    stored_scoring_version: str | None = None
    runtime_scoring_version: str | None = None
    age_days: int | None = None
    threshold_days: int | None = None
    scope: str | None = None
    embedded_rows: int | None = None
    hint: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NearDuplicates:
    """Pairs above ``threshold`` cosine among the rows scanned; ``samples`` are the
    database's pair rows with the cosine to 4 places."""

    pairs: int
    rows_scanned: int
    threshold: float
    skipped_other_width: int
    samples: tuple[JsonObject, ...]


DeepFindings: TypeAlias = (
    AnonymousSources
    | ShortContent
    | StaleProfile
    | OrphanedEpisodes
    | CalibrationAge
    | NearDuplicates
)
DeepRun = Callable[[Connection, DeepScope, bool], Awaitable[DeepFindings]]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DeepSlot:
    """One deep check's result: its findings, or the error it crashed with (300
    characters at most)."""

    name: str
    findings: DeepFindings | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DeepReport:
    """A deep_check run: the checks run in order and their slots, whether it fixed, and
    why repairs were skipped (None when they were not)."""

    agent_id: str
    checks_run: tuple[str, ...]
    results: tuple[DeepSlot, ...]
    fixed: bool
    repairs_skip_reason: str | None = None


async def anonymous_source(conn: Connection, scope: DeepScope, fix: bool) -> AnonymousSources:
    rows = await deep_queries.health_deep_anonymous(conn, scope.tenant_id, scope.agent)
    named = [(row, match.group(1)) for row in rows if (match := _NAME_PREFIX.match(row.content))]
    unnamed = [row for row in rows if not _NAME_PREFIX.match(row.content)]
    locked = sum(1 for row, _ in named if row.locked)
    fixed: int | None = None
    if fix:
        writable = [(row.id, name) for row, name in named if not row.locked]
        ids, names = [i for i, _ in writable], [n for _, n in writable]
        fixed = await deep_queries.health_deep_name_sources(conn, scope.tenant_id, ids, names)
        locked = len(named) - fixed
    return AnonymousSources(
        recoverable=len(named),
        unrecoverable=len(unnamed),
        fixed=fixed,
        unfixable_locked=locked,
        samples=tuple(RecoveredName(id=row.id, recovered_name=name) for row, name in named[:5]),
        unrecoverable_samples=tuple(
            ContentPreview(id=row.id, content_preview=row.content[:60]) for row in unnamed[:5]
        ),
    )


async def short_content(conn: Connection, scope: DeepScope, fix: bool) -> ShortContent:
    limit = SHORT_CONTENT_CHARS
    rows = await deep_queries.health_deep_short(conn, scope.tenant_id, scope.agent, limit)
    fixed: int | None = None
    if fix:
        fixed = await deep_queries.health_deep_delete_short(
            conn, scope.tenant_id, scope.agent, limit
        )
    samples = tuple(ShortRow(id=row.id, content=row.content) for row in rows[:10])
    return ShortContent(count=len(rows), fixed=fixed, samples=samples)


async def stale_profile(conn: Connection, scope: DeepScope, fix: bool) -> StaleProfile:
    days = STALE_PROFILE_DAYS
    found = await deep_queries.health_deep_stale_profile(conn, scope.tenant_id, scope.agent, days)
    last = None if found.last_updated is None else found.last_updated.isoformat()
    return StaleProfile(count=found.count, threshold_days=days, last_updated=last)


async def orphaned_episodes(conn: Connection, scope: DeepScope, fix: bool) -> OrphanedEpisodes:
    """Episodes whose time range contains none of the agent's memory timestamps."""
    ranges = await deep_queries.health_deep_episode_ranges(conn, scope.tenant_id, scope.agent)
    usable: list[tuple[deep_queries.EpisodeRange, datetime, datetime]] = []
    for r in ranges:
        start, end = text.parse_timestamp(r.start_time), text.parse_timestamp(r.end_time)
        if start is not None and end is not None:
            usable.append((r, start, end))
    ids, starts, ends = (
        [r.id for r, _, _ in usable],
        [s for _, s, _ in usable],
        [e for *_, e in usable],
    )
    orphans = set(
        await deep_queries.health_deep_orphans(
            conn, scope.tenant_id, scope.agent, ids, starts, ends
        )
    )
    found = [r for r, _, _ in usable if r.id in orphans]
    samples = tuple(
        EpisodeSample(id=r.id, summary=r.summary[:80], start=r.start_time, end=r.end_time)
        for r in found[:5]
    )
    return OrphanedEpisodes(
        count=len(found), unparseable=len(ranges) - len(usable), samples=samples
    )


def _calibration_age(found: deep_queries.Calibration) -> CalibrationAge:
    if found.scoring_version is not None and found.scoring_version != SCORING_VERSION:
        return CalibrationAge(
            status="stale_scoring_version",
            stored_scoring_version=found.scoring_version,
            runtime_scoring_version=SCORING_VERSION,
            hint="run calibrate_threshold",
        )
    if found.calibrated_at is None:
        return CalibrationAge(status="unknown", reason="the calibration has no calibrated_at")
    age_days = (datetime.now(UTC) - found.calibrated_at).days
    scope = "agent" if found.agent_scope else "tenant"
    if age_days > CALIBRATION_STALE_DAYS:
        return CalibrationAge(
            status="stale",
            age_days=age_days,
            threshold_days=CALIBRATION_STALE_DAYS,
            scope=scope,
            hint="run calibrate_threshold",
        )
    return CalibrationAge(status="ok", age_days=age_days, scope=scope)


async def calibration_staleness(conn: Connection, scope: DeepScope, fix: bool) -> CalibrationAge:
    """Whether the recall threshold this agent uses was calibrated, and how long ago."""
    if not scope.provider:
        return CalibrationAge(status="not_applicable", reason="no embedding provider configured")
    found = await deep_queries.health_deep_calibration(conn, scope.tenant_id, scope.agent)
    if found.calibrated:
        return _calibration_age(found)
    if found.embedded >= CALIBRATION_MIN_EMBEDDED:
        return CalibrationAge(
            status="never_calibrated",
            embedded_rows=found.embedded,
            hint="run calibrate_threshold",
        )
    return CalibrationAge(
        status="ok", reason=f"corpus too small to matter ({found.embedded} embedded rows)"
    )


async def near_duplicate(conn: Connection, scope: DeepScope, fix: bool) -> NearDuplicates:
    """Merge candidates: cosine above 0.97, computed by pgvector in the database."""
    found = await deep_queries.health_deep_near_duplicates(
        conn, scope.tenant_id, scope.agent, NEAR_DUPLICATE_ROWS, NEAR_DUPLICATE_COSINE, 20
    )
    return NearDuplicates(
        pairs=found.pairs,
        rows_scanned=found.rows_scanned,
        threshold=NEAR_DUPLICATE_COSINE,
        skipped_other_width=found.other_width,
        samples=tuple({**pair, "cosine": round(pair["cosine"], 4)} for pair in found.samples),
    )


DEEP_CHECKS: MappingProxyType[str, DeepRun] = MappingProxyType(
    {
        "anonymous_source": anonymous_source,
        "short_content": short_content,
        "stale_profile": stale_profile,
        "orphaned_episodes": orphaned_episodes,
        "calibration_staleness": calibration_staleness,
        "near_duplicate": near_duplicate,
    }
)
DEEP_FIXABLE = frozenset({"anonymous_source", "short_content"})


async def _slot(conn: Connection, scope: DeepScope, name: str, fix: bool) -> DeepSlot:
    try:
        async with conn.transaction():
            return DeepSlot(name=name, findings=await DEEP_CHECKS[name](conn, scope, fix))
    except Exception as exc:  # isolation boundary: the check's error slot
        log.exception("deep_check_crashed", check=name)
        return DeepSlot(name=name, error=f"{type(exc).__name__}: {exc}"[:300])


async def deep_check(
    lib: Library,
    tenant_id: TenantId,
    agent_id: str,
    fix: bool = False,
    checks: Sequence[str] = (),
    *,
    paused: bool = False,
) -> DeepReport:
    """Run the named deep checks (all when empty) for one agent of the tenant.

    ``paused``: no-persist mode; ``fix`` is downgraded and ``repairs_skipped`` set.
    """
    repairs_skipped = fix and paused
    fix = fix and not paused
    names = list(dict.fromkeys(name for name in (checks or DEEP_CHECKS) if name in DEEP_CHECKS))
    scope = DeepScope(tenant_id, agent_id, lib.settings, lib.embedder is not None)
    results: list[DeepSlot] = []
    async with lib.db.tenant_tx(tenant_id) as conn:
        for name in names:
            results.append(await _slot(conn, scope, name, fix))
    return DeepReport(
        agent_id=agent_id,
        checks_run=tuple(names),
        results=tuple(results),
        fixed=fix,
        repairs_skip_reason=PAUSE_REASON if repairs_skipped else None,
    )
