"""The export area's grants, retention, quota and deletion, over MCP and HTTP.

Issue 10 (2): every key of a tenant shared one export area, so a key with
``secret=none, *=read-write`` imported another key's export of agent ``secret`` into
its own agent and read it, overwrote that export, and downloaded it with the other
key's ``download_url``. Each of those routes is tried here with two keys of one
tenant (the real app, the official MCP client, real HTTP) and must be refused with
the tools' ``permission_denied`` shape, leaving the owner's file intact.
Issue 10 (9): after ``delete_agent_data`` the agent's export could still be imported;
the area had no retention and no quota.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import httpx

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.memory.portability import files
from service.models import TenantId
from tests.support import Agent, Served, new_tenant, serve

SECRET = "the vault code is 4711"


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


async def http(served: Served, key: str, method: str, path: str, body: bytes = b"") -> Any:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as client:
        headers = {"authorization": f"Bearer {key}"}
        return await client.request(method, path, content=body or None, headers=headers)


@dataclasses.dataclass
class Keys:
    owner: Agent
    mallory: Agent
    """secret=none, *=read-write: may write anything except agent ``secret``."""


async def two_keys(lib: Library, served: Served) -> Keys:
    owner = await new_tenant(lib, "acme")
    mallory = await tenants.create_key(
        lib.db, "acme", label="mallory", grants={"secret": "none", "*": "read-write"}
    )
    return Keys(Agent(served, owner), Agent(served, mallory))


def denied(body: Any, required: str, where: dict[str, str]) -> None:
    """The denial names no agent the file holds (issue 36, finding 11): only "not permitted"."""
    assert body == {
        "ok": False,
        "error": "permission_denied",
        **where,
        "required": required,
        "client_id": "mallory",
        "detail": "not permitted",
    }
    assert "secret" not in json.dumps(body)


async def test_another_keys_export_of_a_denied_agent_is_refused_on_every_route(
    lib: Library, served: Served
) -> None:
    keys = await two_keys(lib, served)
    await keys.owner.call("store", agent_id="secret", message={"content": SECRET})
    await keys.owner.call("update_profile", agent_id="secret", profile=SECRET)
    exported = await keys.owner.call("export_memories", agent_id="secret", output_path="s.jsonl")
    original = await http(served, keys.owner.key, "GET", exported["download_url"])
    assert original.status_code == 200
    assert SECRET.encode() in original.content

    # import_memories into its own agent (the reported bypass), dry run or not
    for dry_run in (False, True):
        body = await keys.mallory.call(
            "import_memories", input_path="s.jsonl", target_agent_id="mine", dry_run=dry_run
        )
        denied(body, "read", {"tool": "import_memories"})
    assert (await keys.mallory.call("list_memories", agent_id="mine"))["count"] == 0
    assert await keys.mallory.call("get_profile", agent_id="mine") == {"profile": ""}
    # overwriting the owner's file with an export of its own agent
    overwrite = await keys.mallory.call("export_memories", agent_id="mine", output_path="s.jsonl")
    denied(overwrite, "read-write", {"tool": "export_memories"})
    # overwriting it with an upload
    upload = await http(served, keys.mallory.key, "POST", "/v1/files/s.jsonl", b"{}\n")
    assert upload.status_code == 403
    denied(upload.json(), "read-write", {"endpoint": "/v1/files/s.jsonl"})
    # downloading it with the owner's download_url
    stolen = await http(served, keys.mallory.key, "GET", exported["download_url"])
    assert stolen.status_code == 403
    denied(stolen.json(), "read", {"endpoint": stolen.request.url.path})
    # the owner's file is intact and still the owner's
    kept = await http(served, keys.owner.key, "GET", exported["download_url"])
    assert (kept.status_code, kept.content) == (200, original.content)


async def test_a_file_is_guarded_by_the_agents_it_holds_whoever_wrote_it(
    lib: Library, served: Served
) -> None:
    keys = await two_keys(lib, served)
    await keys.owner.call("store", agent_id="secret", message={"content": SECRET})
    await keys.owner.call("store", agent_id="public", message={"content": "public fact"})
    # a sweep export holds every agent with records: both
    await keys.owner.call("export_memories", agent_id="", output_path="all.jsonl")
    body = await keys.mallory.call("import_memories", input_path="all.jsonl", target_agent_id="m")
    denied(body, "read", {"tool": "import_memories"})
    # an export of a readable agent is fine for the other key
    await keys.owner.call("export_memories", agent_id="public", output_path="pub.jsonl")
    fine = await keys.mallory.call("import_memories", input_path="pub.jsonl", target_agent_id="m")
    assert fine["imported_memories"] == 1
    # an upload holds the agents its records name, even the uploader's own upload
    records = jsonl({"_type": "memory", "agent_id": "secret", "content": "planted"})
    assert (await http(served, keys.mallory.key, "POST", "/v1/files/u.jsonl", records)).is_success
    own = await keys.mallory.call("import_memories", input_path="u.jsonl", target_agent_id="m")
    denied(own, "read", {"tool": "import_memories"})
    # and overwriting a file needs read-write on what it holds, for the writer too
    taken = await keys.mallory.call("export_memories", agent_id="m", output_path="u.jsonl")
    denied(taken, "read-write", {"tool": "export_memories"})


async def test_a_download_link_stops_working_once_its_file_is_replaced(
    lib: Library, served: Served
) -> None:
    owner = Agent(served, await new_tenant(lib, "acme"))
    await owner.call("store", agent_id="a", message={"content": "first version"})
    first = await owner.call("export_memories", agent_id="a", output_path="x.jsonl")
    second = await owner.call("export_memories", agent_id="a", output_path="x.jsonl")
    stale = await http(served, owner.key, "GET", first["download_url"])
    assert (stale.status_code, stale.json()) == (404, {"error": "not found"})
    assert (await http(served, owner.key, "GET", second["download_url"])).status_code == 200


async def test_the_streamed_import_checks_its_target_and_the_bodys_agents(
    lib: Library, served: Served
) -> None:
    keys = await two_keys(lib, served)
    records = jsonl({"_type": "memory", "agent_id": "secret", "content": "into secret?"})
    into_secret = await http(
        served, keys.mallory.key, "POST", "/v1/import?target_agent_id=secret", records
    )
    assert into_secret.status_code == 403
    own_agents = await http(served, keys.mallory.key, "POST", "/v1/import", records)
    assert (own_agents.status_code, own_agents.json()["agent_id"]) == (403, "*")
    own_target = await http(
        served, keys.mallory.key, "POST", "/v1/import?target_agent_id=mine", records
    )
    assert own_target.json()["imported_memories"] == 1  # the client's own bytes, its agent
    assert (await keys.owner.call("list_memories", agent_id="secret"))["count"] == 0


async def test_delete_agent_data_removes_the_export_files_holding_the_agent(
    lib: Library, served: Served, settings: Settings
) -> None:
    owner = Agent(served, await new_tenant(lib, "acme"))
    await owner.call("store", agent_id="gone", message={"content": "to be forgotten"})
    await owner.call("store", agent_id="kept", message={"content": "to be kept"})
    await owner.call("export_memories", agent_id="gone", output_path="gone.jsonl")
    everything = await owner.call("export_memories", agent_id="", output_path="all.jsonl")
    await owner.call("export_memories", agent_id="kept", output_path="kept.jsonl")
    records = jsonl({"_type": "memory", "agent_id": "gone", "content": "uploaded copy"})
    assert (await http(served, owner.key, "POST", "/v1/files/up.jsonl", records)).is_success
    deleted = await owner.call("delete_agent_data", agent_id="gone")
    assert deleted["deleted_memories"] == 1
    for name in ("gone.jsonl", "all.jsonl", "up.jsonl"):
        body = await owner.call("import_memories", input_path=name, target_agent_id="back")
        assert body == {"ok": False, "error": f"File not found: {name}"}
    stale = await http(served, owner.key, "GET", everything["download_url"])
    assert stale.status_code == 404
    assert (await owner.call("list_memories", agent_id="back"))["count"] == 0
    tenant = next(row for row in await tenants.list_tenants(lib.db) if row.slug == "acme")
    area = files.tenant_area(settings, TenantId(tenant.id))
    left = [p.read_bytes() for p in area.iterdir()]
    assert len(left) == 1
    assert b"to be kept" in left[0]
    assert b"forgotten" not in left[0]
    restored = await owner.call("import_memories", input_path="kept.jsonl", target_agent_id="b")
    assert restored["imported_memories"] == 1


async def test_files_expire_after_the_retention_period(
    lib: Library, settings: Settings, database_url: str
) -> None:
    short = dataclasses.replace(settings, export_retention_hours=1.5 / 3600)  # 1.5 s
    async with serve(short, database_url) as served:
        owner = Agent(served, await new_tenant(lib, "acme"))
        await owner.call("store", agent_id="a", message={"content": "short-lived export"})
        exported = await owner.call("export_memories", agent_id="a", output_path="x.jsonl")
        assert (await http(served, owner.key, "GET", exported["download_url"])).status_code == 200
        deadline = time.monotonic() + 10
        while (await http(served, owner.key, "GET", exported["download_url"])).status_code == 200:
            assert time.monotonic() < deadline, "the file did not expire"
            await asyncio.sleep(0.2)
        gone = await owner.call("import_memories", input_path="x.jsonl", target_agent_id="b")
        assert gone == {"ok": False, "error": "File not found: x.jsonl"}
        tenant = next(row for row in await tenants.list_tenants(lib.db) if row.slug == "acme")
        assert list(files.tenant_area(short, TenantId(tenant.id)).iterdir()) == []  # on access


async def test_the_area_quota_refuses_a_write_that_would_pass_it_and_keeps_nothing(
    lib: Library, settings: Settings, database_url: str
) -> None:
    small = dataclasses.replace(settings, export_quota_bytes=2048)
    async with serve(small, database_url) as served:
        owner = Agent(served, await new_tenant(lib, "acme"))
        await owner.call("store", agent_id="a", message={"content": "x" * 900})
        first = await owner.call("export_memories", agent_id="a", output_path="one.jsonl")
        assert first["ok"] is True
        again = await owner.call("export_memories", agent_id="a", output_path="one.jsonl")
        assert again["ok"] is True  # replacing a file frees its old size
        await owner.call("store", agent_id="a", message={"content": "y" * 900})
        second = await owner.call("export_memories", agent_id="a", output_path="two.jsonl")
        assert second["ok"] is False
        assert second["error"].startswith("export area quota exceeded: your files use ")
        assert (second["quota_bytes"], second["used_bytes"]) == (2048, second["used_bytes"])
        assert 900 < second["used_bytes"] < 2048
        missing = await owner.call("import_memories", input_path="two.jsonl")
        assert missing == {"ok": False, "error": "File not found: two.jsonl"}
        upload = await http(served, owner.key, "POST", "/v1/files/up.jsonl", b"\n" * 1500)
        assert upload.status_code == 413
        assert upload.json()["error"].startswith("export area quota exceeded")
        assert (await owner.call("import_memories", input_path="one.jsonl"))["ok"] is True
