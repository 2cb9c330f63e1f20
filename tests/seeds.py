"""Rows written straight into the tables (as the app role), for tests of checks and views
that the write paths would refuse to produce."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from service.db.pool import Connection, Database
from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId


class WidthOnly:
    """A configured embedding provider of a fixed width that is never called: repairs
    only queue rows, they never embed inline."""

    name = "width-only"

    def __init__(self, dimension: int = 384) -> None:
        self.dimension = dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("health repairs must not call the provider")

    async def aclose(self) -> None:
        return None


def unit(width: int, hot: int = 0) -> list[float]:
    vector = [0.0] * width
    vector[hot] = 1.0
    return vector


@dataclasses.dataclass
class Seed:
    """Rows of one tenant written straight into the tables (as the app role)."""

    db: Database
    tenant_id: TenantId

    async def agent(self, name: str) -> int:
        async with self.db.tenant_tx(self.tenant_id) as conn:
            return int(
                await conn.fetchval(
                    "INSERT INTO agents (tenant_id, name) VALUES ($1, $2) "
                    "ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name "
                    "RETURNING id",
                    self.tenant_id,
                    name,
                )
            )

    async def memory(self, content: str, agent: str = "a", **fields: Any) -> int:
        row = {
            "channel": "",
            "project_id": "",
            "locked": False,
            "metadata": {},
            "source": {},
            "timestamp_text": "",
            "timestamp_at": None,
            "embedding": None,
            "msg_id": "",
        }
        row.update(fields)
        agent_id = await self.agent(agent)
        async with self.db.tenant_tx(self.tenant_id) as conn:
            return int(
                await conn.fetchval(
                    "INSERT INTO memories (tenant_id, agent_id, content, channel, project_id, "
                    "locked, metadata, source, timestamp_text, timestamp_at, embedding, msg_id) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
                    self.tenant_id,
                    agent_id,
                    content,
                    row["channel"],
                    row["project_id"],
                    row["locked"],
                    row["metadata"],
                    row["source"],
                    row["timestamp_text"],
                    row["timestamp_at"],
                    row["embedding"],
                    row["msg_id"],
                )
            )

    async def episode(self, summary: str, agent: str = "a", **fields: Any) -> int:
        row = {"start_time": None, "end_time": None, "embedding": None}
        row.update(fields)
        agent_id = await self.agent(agent)
        async with self.db.tenant_tx(self.tenant_id) as conn:
            return int(
                await conn.fetchval(
                    "INSERT INTO episodes (tenant_id, agent_id, summary, start_time, end_time, "
                    "embedding) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                    self.tenant_id,
                    agent_id,
                    summary,
                    row["start_time"],
                    row["end_time"],
                    row["embedding"],
                )
            )

    async def fetch(self, query: str, *args: Any) -> list[dict[str, Any]]:
        async with self.db.tenant_tx(self.tenant_id) as conn:
            return [dict(r) for r in await conn.fetch(query, *args)]

    async def memory_row(self, memory_id: int) -> dict[str, Any] | None:
        rows = await self.fetch(
            "SELECT content, channel, locked, metadata, source, timestamp_text, embedding "
            "FROM memories WHERE tenant_id = $1 AND id = $2",
            self.tenant_id,
            memory_id,
        )
        return rows[0] if rows else None


async def new_seed(lib: Library, slug: str = "acme") -> Seed:
    row = await tenants.create_tenant(lib.db, slug)
    return Seed(lib.db, TenantId(row.id))


async def link_chain(conn: Connection, tenant: TenantId, agent: int, ids: Sequence[int]) -> None:
    """Declare each of the memories ``ids`` (oldest first) superseded by the next, in one
    statement: a long chain for the bounded walks, without a tool call per link."""
    await conn.execute(
        "INSERT INTO relations (tenant_id, agent_id, subject_kind, subject_id, predicate,"
        " object_kind, object_id) SELECT $1, $2, 'mem', n, 'supersedes', 'mem', o"
        " FROM unnest($3::bigint[], $4::bigint[]) x(n, o)",
        tenant,
        agent,
        list(ids[1:]),
        list(ids[:-1]),
    )
