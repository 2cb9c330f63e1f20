"""Recall's side statements (``sql/recall_side.sql``, which also holds the parts the recall
statements share: the scope and the found rows): the LIKE fallback when full text
finds nothing, the plan mode after a generic-plan statement, the recall statistics and
the advisory state; the main statements are in :mod:`service.db.recall`."""

from __future__ import annotations

from collections.abc import Sequence

from service.db.pool import Connection
from service.db.recall import Hit, Scope
from service.db.sql import QUERIES
from service.models import TenantId


async def plan_each_statement(conn: Connection) -> None:
    """Plan the rest of this transaction's statements for their values again (after a
    recall statement with a generic plan: the LIKE fallback's pattern needs it)."""
    await conn.execute(QUERIES["plan_each_statement"])


async def like_fallback(
    conn: Connection, tenant_id: TenantId, scope: Scope, pattern: str, fetch: int
) -> list[Hit]:
    records = await conn.fetch(
        QUERIES["like_fallback"],
        tenant_id,
        scope.agent,
        scope.project_id,
        scope.channel,
        scope.source_pattern,
        pattern,
        fetch,
    )
    return [
        Hit(
            "keyword",
            "mem",
            r["id"],
            None,
            n,
            r["content"],
            r["source"],
            r["timestamp_text"],
            r["msg_id"],
            r["created_at"],
            None,
        )
        for n, r in enumerate(records, start=1)
    ]


async def bump_recall_stats(conn: Connection, tenant_id: TenantId, ids: Sequence[int]) -> None:
    await conn.execute(QUERIES["bump_recall_stats"], tenant_id, list(ids))


async def note_advisory(conn: Connection, tenant_id: TenantId, state: str, long_form: bool) -> bool:
    """Record the advisory state; True when the long runbook had been shown before."""
    return bool(await conn.fetchval(QUERIES["note_advisory"], tenant_id, state, long_form))
