"""The export area's catalogue in the library: the sweep, strays, and the per-record check.

The routes' behaviour is tested end to end in ``tests/e2e/test_export_area.py``; this
file drives ``export_area`` directly against a real database and a real directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator

import pytest

from service.memory import tenants
from service.memory.library import Library
from service.memory.portability import export, export_area, files, hosted, import_
from service.memory.portability.access import Access, AgentDenied
from service.models import Permission, TenantId


def access(denied: str = "", key_id: str = "cpk_test") -> Access:
    def allows(agent: str, level: Permission) -> bool:
        return agent != denied

    return Access(key_id, allows)


async def body(*lines: bytes) -> AsyncIterator[bytes]:
    for line in lines:
        yield line


async def _tenant(lib: Library) -> TenantId:
    return TenantId((await tenants.create_tenant(lib.db, "acme")).id)


async def _rows(lib: Library) -> list[tuple[str, list[str], str]]:
    async with lib.db.admin_tx() as conn:
        records = await conn.fetch(
            "SELECT name, agents, writer_key_id FROM export_files ORDER BY name"
        )
    return [(r["name"], list(r["agents"]), r["writer_key_id"]) for r in records]


async def test_files_record_their_agents_and_writer(lib: Library) -> None:
    tenant = await _tenant(lib)
    record = json.dumps({"_type": "memory", "agent_id": "b", "content": "x"}).encode()
    profile = json.dumps({"_type": "profile", "agent_id": "c", "content": "p"}).encode()
    junk = b'{"_type": ["memory"], "agent_id": "never"}\n{"agent_id": "untyped"}\nnot json\n'
    size = await hosted.upload_to_area(
        lib, tenant, access(), "up.jsonl", body(record[:9], record[9:] + b"\n" + junk, profile)
    )
    assert size == len(record) + 1 + len(junk) + len(profile)
    request = export.ExportRequest("a")
    await hosted.export_to_area(lib, tenant, access(key_id="cpk_other"), "a.jsonl", request)
    assert await _rows(lib) == [
        ("a.jsonl", ["a"], "cpk_other"),
        ("up.jsonl", ["b", "c"], "cpk_test"),
    ]


async def test_every_record_is_checked_even_when_the_catalogue_is_wrong(lib: Library) -> None:
    """Defence in depth: an import reads each record's own agent against the caller's
    grants, so a catalogue row that under-reports a file's agents still leaks nothing."""
    tenant = await _tenant(lib)
    lines = (b'{"_type": "memory", "agent_id": "secret", "content": "hidden"}\n',)
    await hosted.upload_to_area(lib, tenant, access(), "f.jsonl", body(*lines))
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute("UPDATE export_files SET agents = '{harmless}'")
    request = import_.ImportRequest("mine")
    with pytest.raises(AgentDenied) as refused:
        await hosted.import_from_area(lib, tenant, access(denied="secret"), "f.jsonl", request)
    assert (refused.value.agent, refused.value.required) == ("secret", "read")
    async with lib.db.admin_tx() as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories") == 0


async def test_the_sweep_deletes_expired_files_and_old_strays(lib: Library) -> None:
    tenant = await _tenant(lib)
    for name in ("old.jsonl", "new.jsonl"):
        await hosted.upload_to_area(lib, tenant, access(), name, body(b"{}\n"))
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute(
            "UPDATE export_files SET expires_at = now() - interval '1 second' "
            "WHERE name = 'old.jsonl'"
        )
    area = files.tenant_area(lib.settings, tenant)
    (area / "legacy").mkdir()
    for stray in (area / "legacy" / "backup.jsonl", area / "fdead.jsonl"):
        stray.write_bytes(b"{}\n")
        long_ago = time.time() - 2 * export_area.STRAY_GRACE_SECONDS
        os.utime(stray, (long_ago, long_ago))
    fresh = area / ".x.tmp.1"
    fresh.write_bytes(b"being written")
    assert await export_area.sweep(lib) == 3
    assert [name for name, _, _ in await _rows(lib)] == ["new.jsonl"]
    remaining = sorted(p.name for p in area.iterdir())
    assert len(remaining) == 2
    assert ".x.tmp.1" in remaining
    assert await export_area.sweep(lib) == 0


async def test_the_sweeper_runs_until_stopped(lib: Library) -> None:
    tenant = await _tenant(lib)
    await hosted.upload_to_area(lib, tenant, access(), "x.jsonl", body(b"{}\n"))
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute("UPDATE export_files SET expires_at = now()")
    stop = asyncio.Event()
    sweeper = asyncio.create_task(export_area.run_sweeper(lib, stop, interval=0.05))
    deadline = time.monotonic() + 10
    while await _rows(lib):
        assert time.monotonic() < deadline, "the sweeper did not delete the expired file"
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(sweeper, timeout=5)
    assert list(files.tenant_area(lib.settings, tenant).iterdir()) == []
