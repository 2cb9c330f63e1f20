"""Stored text reaches the operator's terminal escaped (issue 36, finding 10).

Tool names, tenant names, key labels, grants and agent names are stored from what
clients and operators sent. Printed raw, an ESC sequence recolours or retitles the
operator's terminal, a CR/LF forges report lines, a C1 CSI or a bidi override hides
text. Every command that prints stored text escapes control characters.
"""

from __future__ import annotations

import asyncio
import unicodedata
from datetime import UTC, datetime

from service.memory import tenants
from service.memory.library import Library
from tests.seeds import new_seed
from tests.support import run_cli

HOSTILE = "evil\x1b[31m\r\nforged\x07\x9b2J\u202eX"
ESCAPED = "evil\\x1b[31m\\r\\nforged\\x07\\x9b2J\\u202eX"


def _raw_controls(out: str) -> list[str]:
    """Control and bidi characters in ``out`` other than the line breaks of the report."""
    return [
        ch
        for ch in out
        if ch != "\n" and (unicodedata.category(ch) == "Cc" or unicodedata.bidirectional(ch) in
                           {"RLO", "LRO", "RLE", "LRE", "PDF", "RLI", "LRI", "FSI", "PDI"})
    ]  # fmt: skip


async def _cli(database_url: str, *args: str) -> str:
    done = await asyncio.to_thread(
        run_cli, database_url, *args, env={"CPERSONA_EMBEDDING_MODE": "none"}
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout + done.stderr


async def test_usage_prints_stored_tool_names_escaped(lib: Library, database_url: str) -> None:
    seed = await new_seed(lib, "metered")
    async with lib.db.admin_tx() as conn:  # a row counted before unknown names were pooled
        await conn.execute(
            "INSERT INTO usage_daily (tenant_id, day, tool, calls) VALUES ($1, $2, $3, 1)",
            seed.tenant_id,
            datetime.now(UTC).date(),
            HOSTILE,
        )
    out = await _cli(database_url, "usage", "--tenant", "metered")
    assert ESCAPED in out
    assert _raw_controls(out) == []


async def test_tenant_and_key_lists_print_names_labels_and_grants_escaped(
    lib: Library, database_url: str
) -> None:
    await tenants.create_tenant(lib.db, "named", HOSTILE)
    await tenants.create_key(lib.db, "named", label=HOSTILE, grants={HOSTILE: "read"})
    for args in (("tenant", "list"), ("key", "list", "--tenant", "named")):
        out = await _cli(database_url, *args)
        assert ESCAPED in out, args
        assert _raw_controls(out) == [], args


async def test_checkup_prints_agent_names_escaped(lib: Library, database_url: str) -> None:
    seed = await new_seed(lib, "agents")
    await seed.memory("a memory without a profile", agent=HOSTILE)
    out = await _cli(database_url, "checkup", "--tenant", "agents")
    assert "missing_profile" in out
    assert _raw_controls(out) == []
