"""migrate_channel_axis (docs/health.md, "migrate_channel_axis"): move memories filed under the
bridge *type* ``discord`` to the concrete channel their session id names.

A Discord bridge stores ``metadata.session_id`` as ``"<channel_id>:<user>:<chunk>"``
or ``"<channel_id>:shared"``. Rows whose session id starts with a digit and holds a
``:`` are recoverable: their channel becomes the text before the first ``:``. The
rest are unrecoverable (including rows whose metadata is not a JSON object, also
listed on their own); ``globalize_unrecoverable`` moves those to the channel-less
pool, which every channel-scoped read sees. Only ``channel`` changes. A move that
would duplicate content already in the target bucket is skipped, as CPersona's
``UPDATE OR IGNORE`` does, so the migration always completes; locked rows are left
where they are (``skipped_locked``). Idempotent: a moved row no longer matches.
``dry_run`` (the default) reports without writing; a persistence pause forces it.
"""

from __future__ import annotations

import dataclasses

from service.db.health import channel_axis as channel_axis_queries
from service.memory.library import Library
from service.models import JsonObject, TenantId

INVALID_ID_LIMIT = 10
SAMPLE_LIMIT = 5
PAUSE_REASON = "no-persist mode active — dry_run forced"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChannelMigration:
    """The survey of the ``discord`` rows and what was moved. ``recoverable_by_channel``
    and ``samples`` are the survey's rows as the database reports them;
    ``skipped_locked`` counts locked rows a write would have moved;
    ``repairs_skip_reason`` is set when a pause forced the dry run."""

    agent_id: str
    dry_run: bool
    recoverable_total: int
    recoverable_by_channel: tuple[JsonObject, ...]
    unrecoverable_total: int
    invalid_metadata_total: int
    invalid_metadata_ids: tuple[int, ...]
    globalize_unrecoverable: bool
    migrated: int
    globalized: int
    samples: tuple[JsonObject, ...]
    skipped_locked: int
    repairs_skip_reason: str | None = None


async def migrate_channel_axis(
    lib: Library,
    tenant_id: TenantId,
    agent_id: str = "",
    dry_run: bool = True,
    globalize_unrecoverable: bool = False,
    *,
    paused: bool = False,
) -> ChannelMigration:
    """Survey (and unless dry-run, migrate) the tenant's ``discord`` rows in one
    transaction; ``agent_id`` ``''`` covers every agent of the tenant."""
    effective_dry_run = dry_run or paused
    agent = agent_id or None
    migrated = globalized = 0
    async with lib.db.tenant_tx(tenant_id) as conn:
        survey = await channel_axis_queries.health_discord_survey(
            conn, tenant_id, agent, INVALID_ID_LIMIT, SAMPLE_LIMIT
        )
        if not effective_dry_run:
            migrated = await channel_axis_queries.health_rechannel_discord(conn, tenant_id, agent)
            if globalize_unrecoverable:
                globalized = await channel_axis_queries.health_globalize_discord(
                    conn, tenant_id, agent
                )
    locked = survey.recoverable_locked + (
        survey.unrecoverable_locked if globalize_unrecoverable else 0
    )
    return ChannelMigration(
        agent_id=agent_id,
        dry_run=effective_dry_run,
        recoverable_total=survey.recoverable,
        recoverable_by_channel=tuple(survey.by_channel),
        unrecoverable_total=survey.total - survey.recoverable,
        invalid_metadata_total=survey.invalid_metadata,
        invalid_metadata_ids=tuple(survey.invalid_ids),
        globalize_unrecoverable=globalize_unrecoverable,
        migrated=migrated,
        globalized=globalized,
        samples=tuple(survey.samples),
        skipped_locked=locked,
        repairs_skip_reason=PAUSE_REASON if paused and not dry_run else None,
    )
