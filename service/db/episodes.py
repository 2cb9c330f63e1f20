"""Storage of episodes: one function per named query of ``sql/episodes.sql``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class NewEpisode:
    agent_id: int
    project_id: str
    channel: str
    summary: str
    keywords: str
    start_time: str | None
    end_time: str | None
    resolved: bool
    embedding: Sequence[float] | None = None
    embedding_model: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeListRow:
    id: int
    agent_id: str
    project_id: str
    summary: str
    keywords: str
    start_time: str | None
    end_time: str | None
    created_at: datetime


async def insert_episode(conn: Connection, tenant_id: TenantId, row: NewEpisode) -> int:
    value = await conn.fetchval(
        QUERIES["insert_episode"],
        *arguments(
            "insert_episode",
            {
                "tenant_id": tenant_id,
                "agent_id": row.agent_id,
                "project_id": row.project_id,
                "channel": row.channel,
                "summary": row.summary,
                "keywords": row.keywords,
                "start_time": row.start_time,
                "end_time": row.end_time,
                "resolved": row.resolved,
                "embedding": None if row.embedding is None else list(row.embedding),
                "embedding_model": row.embedding_model,
            },
        ),
    )
    return int(value)


async def list_episodes(
    conn: Connection,
    tenant_id: TenantId,
    agent_name: str | None,
    project_id: str | None,
    limit: int,
) -> list[EpisodeListRow]:
    records = await conn.fetch(QUERIES["list_episodes"], tenant_id, agent_name, project_id, limit)
    return [
        EpisodeListRow(
            id=r["id"],
            agent_id=r["agent_id"],
            project_id=r["project_id"],
            summary=r["summary"],
            keywords=r["keywords"],
            start_time=r["start_time"],
            end_time=r["end_time"],
            created_at=r["created_at"],
        )
        for r in records
    ]


async def delete_episode(
    conn: Connection, tenant_id: TenantId, episode_id: int, agent_name: str | None
) -> bool:
    value = await conn.fetchval(QUERIES["delete_episode"], tenant_id, episode_id, agent_name)
    return value is not None


async def delete_agent_episodes(conn: Connection, tenant_id: TenantId, agent_id: int) -> int:
    return int(await conn.fetchval(QUERIES["delete_agent_episodes"], tenant_id, agent_id))
