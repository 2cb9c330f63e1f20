"""The statements the service sends for one recall, run and recorded as it runs them.

The service's own db function (``service/db/recall.py``) builds the arguments and
executes them on a stand-in connection that runs each ``fetch`` and records its
statement and arguments; :func:`sql_literals` turns the arguments into SQL literals so
a statement can be EXPLAINed as sent. The plan guard (``tests/db/test_recall_plan.py``)
and the recall-latency benchmark's plan inspection (``bench/latency/plans.py``) share
it. The service is imported late, so a benchmark can point ``sys.path`` at its code
snapshot first.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import asyncpg

if TYPE_CHECKING:
    from service.db.recall import Candidates, Retrieval, Scope


def retrieval(text: str, vector: Sequence[float]) -> Retrieval:
    """The service's ``Retrieval`` for a plain default recall (hybrid: lexical depth 100,
    vector depth 20; limit 10, no filters) of ``text``.

    Built field by field from the service's own dataclass (defaults as configured by
    default), so a new required field fails loudly here instead of silently measuring
    another statement.
    """
    from service.db import recall as recall_queries
    from service.memory.recall import query_terms

    terms = query_terms.build(text)
    known: dict[str, Any] = {
        "vector": list(vector),
        "tsquery": terms.tsquery,
        "patterns": list(terms.patterns),
        "lexemes": list(getattr(terms, "lexemes", ())),
        "limit": 100,
        "episodes": True,
        "recency": False,
        "confidence": False,
        "vector_depth": 20,
        "query": text,
    }
    fields = dataclasses.fields(recall_queries.Retrieval)
    missing = dataclasses.MISSING
    return recall_queries.Retrieval(
        **{f.name: known[f.name] for f in fields if f.name in known or f.default is missing}
    )


class _Recorder:
    """Stands in for a connection: runs every fetch on ``conn`` and records its statement
    and arguments (the vector half's arguments are the lexical half's results, so the
    statements are run, not just captured)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.calls: list[tuple[str, list[Any]]] = []

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        self.calls.append((sql, list(args)))
        return list(await self.conn.fetch(sql, *args))


async def candidates(
    conn: Any,
    tenant: uuid.UUID,
    agent: str,
    text: str,
    vector: Sequence[float],
    scope: Scope | None = None,
) -> Candidates:
    """``recall_candidates`` of the service for one query (``scope``: the agent's whole
    pool, no project, channel or source filter, unless given).

    ``conn`` is an asyncpg connection or a :class:`_Recorder` standing in for one (only
    ``fetch`` is called), hence ``Any``.
    """
    from service.db import recall as recall_queries
    from service.models import TenantId

    scope = scope or recall_queries.Scope(agent, None, "", None)
    return await recall_queries.recall_candidates(
        conn, TenantId(tenant), scope, retrieval(text, vector)
    )


async def production_calls(
    conn: Any,
    tenant: uuid.UUID,
    agent: str,
    text: str,
    vector: Sequence[float],
    scope: Scope | None = None,
) -> list[tuple[str, list[Any]]]:
    """The statements and arguments the service sends for this recall, in order, run on
    ``conn`` (inside a transaction entered as the tenant): one statement for a code
    snapshot from before the lexical/vector split, two after it."""
    recorder = _Recorder(conn)
    await candidates(recorder, tenant, agent, text, vector, scope)
    if not recorder.calls:
        raise RuntimeError("the service ran no statement")
    return recorder.calls


async def sql_literals(
    conn: asyncpg.Connection[Any] | asyncpg.pool.PoolConnectionProxy[Any],
    statement: str,
    args: Sequence[Any],
) -> str:
    """``statement``'s arguments as SQL literals, each encoded as the parameter type
    Postgres infers for it and quoted by Postgres (``quote_nullable``)."""
    out = []
    for value, kind in zip(args, await parameter_types(conn, statement), strict=True):
        literal = await conn.fetchval(f"SELECT quote_nullable(($1::{kind})::text)", value)
        out.append(literal)
    return ", ".join(out)


async def parameter_types(
    conn: asyncpg.Connection[Any] | asyncpg.pool.PoolConnectionProxy[Any], statement: str
) -> list[str]:
    """The SQL type of each of ``statement``'s parameters, as Postgres infers them."""
    oids = [t.oid for t in (await conn.prepare(statement)).get_parameters()]
    types: list[str] = await conn.fetchval(
        "SELECT array_agg(format_type(o, NULL) ORDER BY n) FROM unnest($1::oid[])"
        " WITH ORDINALITY AS u(o, n)",
        oids,
    )
    return types
