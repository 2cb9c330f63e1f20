"""Storage of migrate_channel_axis: one function per query of ``sql/health_channel.sql``.

Tenant-scoped (``$1``), optionally agent-scoped by name (``None`` = every agent).
Moves skip locked rows and rows whose content already exists in the target bucket.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class DiscordSurvey:
    total: int
    recoverable: int
    recoverable_locked: int
    unrecoverable_locked: int
    invalid_metadata: int
    invalid_ids: list[int]
    by_channel: list[dict[str, Any]]
    samples: list[dict[str, Any]]


async def health_discord_survey(
    conn: Connection, tenant_id: TenantId, agent: str | None, id_limit: int, sample_limit: int
) -> DiscordSurvey:
    record = await conn.fetchrow(
        QUERIES["health_discord_survey"], tenant_id, agent, id_limit, sample_limit
    )
    assert record is not None
    return DiscordSurvey(
        total=record["total"],
        recoverable=record["recoverable"],
        recoverable_locked=record["recoverable_locked"],
        unrecoverable_locked=record["unrecoverable_locked"],
        invalid_metadata=record["invalid_metadata"],
        invalid_ids=[int(i) for i in record["invalid_ids"]],
        by_channel=list(record["by_channel"]),
        samples=list(record["samples"]),
    )


async def health_rechannel_discord(conn: Connection, tenant_id: TenantId, agent: str | None) -> int:
    return int(await conn.fetchval(QUERIES["health_rechannel_discord"], tenant_id, agent))


async def health_globalize_discord(conn: Connection, tenant_id: TenantId, agent: str | None) -> int:
    return int(await conn.fetchval(QUERIES["health_globalize_discord"], tenant_id, agent))
