"""What an interrupted ``CREATE INDEX CONCURRENTLY`` leaves behind, for the tests of the
migrations that build an index that way: an index of the same name marked invalid, which
``IF NOT EXISTS`` alone would keep (so a migration must drop it and build again)."""

from __future__ import annotations

from service.memory.library import Library


async def leave_invalid_index(lib: Library, name: str, table: str, column: str) -> None:
    """Create ``name`` on ``table (column)`` as an invalid index, as an interrupted
    concurrent build leaves it (a wrong definition, so a kept leftover shows)."""
    async with lib.db.admin_tx() as conn:
        await conn.execute(f"CREATE INDEX {name} ON {table} ({column}) WHERE false")
        await conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass", name
        )
