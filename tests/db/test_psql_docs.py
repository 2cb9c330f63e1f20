"""Every ```sql block of docs/psql.md runs against a seeded database and returns rows,
so the documentation and the schema cannot drift apart. Blocks that read only the ops
views also run as cpersona_ops, the read-only role the doc tells operators to use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.db.pool import Connection
from service.memory import tenants
from service.memory.library import Library
from tests.seeds import new_seed

DOC = Path(__file__).resolve().parents[2] / "docs" / "psql.md"
BLOCKS = re.findall(r"^```sql\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)
RELATION = re.compile(r"\b(?:FROM|JOIN)\s+([a-z_][a-z_.]*)", re.I)


def statements(block: str) -> list[str]:
    return [part.strip() for part in re.split(r";\s*$", block, flags=re.M) if part.strip()]


def ops_only(block: str) -> bool:
    return all(name.startswith("ops.") for name in RELATION.findall(block))


async def seed_deployment(lib: Library) -> None:
    """Two tenants with agents, rows, a failed queue job, a pause and a day of usage."""
    acme = await new_seed(lib, "acme")
    await tenants.create_key(lib.db, "acme", label="ops-doc")
    first = await acme.memory("Ada likes tea", agent="assistant")
    await acme.memory("a longer memory " * 20, agent="assistant", project_id="web", channel="c1")
    await acme.episode("a session", agent="assistant", start_time="2026-01-01T00:00:00Z")
    await acme.agent("idle")
    async with lib.db.tenant_tx(acme.tenant_id) as conn:
        await conn.execute(
            "INSERT INTO embedding_jobs (tenant_id, item_kind, item_id, attempts, last_error) "
            "VALUES ($1, 'mem', $2, 3, 'provider answered 500')",
            acme.tenant_id,
            first,
        )
        await conn.execute(
            "INSERT INTO persistence_pauses (tenant_id, session_key, expires_at, created_by) "
            "VALUES ($1, '', now() + interval '10 minutes', 'cpk_000000000000')",
            acme.tenant_id,
        )
        await conn.execute(
            "INSERT INTO usage_daily (tenant_id, day, tool, calls, failures, bytes_out, "
            "chars_returned, chars_saved, tokens_delivered, tokens_saved_previews, "
            "tokens_saved_excerpts, tokens_saved_budgets, tokens_saved_ledger) "
            "VALUES ($1, current_date, 'recall', 12, 1, 40960, 9000, 30000, 10240, 5000, 2500, "
            "800, 400)",
            acme.tenant_id,
        )
    other = await new_seed(lib, "globex")
    await other.memory("another tenant's memory", agent="bot")


async def run_block(conn: Connection, block: str) -> list[dict[str, object]]:
    *setup, last = statements(block)
    for statement in setup:
        await conn.execute(statement)
    return [dict(row) for row in await conn.fetch(last)]


def test_the_doc_has_ten_queries() -> None:
    assert len(BLOCKS) == 10
    assert sum(ops_only(block) for block in BLOCKS) == 7


@pytest.mark.parametrize("number", range(1, len(BLOCKS) + 1))
async def test_documented_query_returns_rows(lib: Library, number: int) -> None:
    await seed_deployment(lib)
    block = BLOCKS[number - 1]
    async with lib.db.admin_tx() as conn:
        rows = await run_block(conn, block)
    assert rows, f"query {number} of docs/psql.md returned nothing"
    if ops_only(block):
        async with lib.db.admin_tx() as conn:
            await conn.execute("SET LOCAL ROLE cpersona_ops")
            as_ops = await run_block(conn, block)
        assert [list(row) for row in as_ops] == [list(row) for row in rows]  # same columns ...
        assert len(as_ops) == len(rows)  # ... and rows (times such as `remaining` move on)
