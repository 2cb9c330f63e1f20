"""The operating context end to end: the CLI on a real database, the tool over real HTTP
with the official MCP client, and the project gate at the boundary on real Postgres."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from service.config import Settings
from service.mcp import project_gate, tools
from service.mcp.checks import with_defaults
from service.mcp.instructions import SERVICE_INSTRUCTIONS
from service.mcp.registry import ToolEnv, ToolSpec
from service.mcp.tools.episodes import ARCHIVE_EPISODE
from service.mcp.tools.memories import LIST_MEMORIES, STORE
from service.mcp.tools.recall import RECALL
from service.memory import tenants
from service.memory.library import Library
from service.memory.operating_context import parse, storage
from service.models import Caller, JsonObject, TenantId
from tests.support import (
    Served,
    body,
    mcp_session,
    modern_client,
    new_tenant,
    run_cli,
    serve,
)

CONTEXT = """\
version = 1
context_revision = "rev-9"

[instructions]
summary = "Use project atlas for product work."

[registry]
project_ids = ["atlas", "borealis"]
enforce = "reject"

[defaults]
alpha = "atlas"

[[doctrine]]
name = "naming"
body = "Names are nouns."
"""


async def test_dormant_tenant_gets_the_spec_dormant_answer(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "quiet")
    async with serve(settings, database_url) as served, mcp_session(served, key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        answer = body(await session.call_tool("get_operating_context", {}))
        section = body(await session.call_tool("get_operating_context", {"section": "naming"}))
    tool = tools["get_operating_context"]
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.input_schema["properties"]["section"]["default"] == ""
    assert answer["ok"] is False
    assert answer["enabled"] is False
    assert answer["error"].startswith("operating context is dormant — ")
    assert "context set --tenant quiet" in answer["error"]
    assert section == answer


async def test_preview_sections_and_tenant_isolation_over_http(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key_a = await new_tenant(lib, "tenant-a", grants={"alpha": "read"})
    key_b = await new_tenant(lib, "tenant-b")
    await storage.set_context(lib.db, "tenant-a", CONTEXT)
    async with serve(settings, database_url) as served:
        async with mcp_session(served, key_a) as session:
            preview = body(await session.call_tool("get_operating_context", {}))
            section = body(await session.call_tool("get_operating_context", {"section": "naming"}))
            unknown = body(await session.call_tool("get_operating_context", {"section": "nope"}))
        async with mcp_session(served, key_b) as session:
            other = body(await session.call_tool("get_operating_context", {}))
    assert preview == {
        "ok": True,
        "context_revision": "rev-9",
        "instructions_summary": "Use project atlas for product work.",
        "registry": {"project_ids": ["atlas", "borealis"], "enforce": "reject"},
        "defaults": {"alpha": "atlas"},
        "doctrine_sections": ["naming"],
    }
    assert section == {
        "ok": True,
        "context_revision": "rev-9",
        "section": "naming",
        "body": "Names are nouns.",
    }
    assert unknown == {
        "ok": False,
        "error": "unknown doctrine section 'nope'",
        "doctrine_sections": ["naming"],
    }
    assert other["enabled"] is False


async def test_cli_sets_shows_and_clears_what_the_tool_serves(
    lib: Library, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    key = await new_tenant(lib, "acme")
    good = tmp_path / "context.toml"
    good.write_text(CONTEXT + "\n[extra]\nnote = 'x'\n", encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(CONTEXT.replace('enforce = "reject"', 'enforce = "strict"'), encoding="utf-8")

    refused = run_cli(database_url, "context", "set", "--tenant", "acme", str(bad))
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1
    assert f"{bad}: registry.enforce must be one of" in refused.stderr
    assert "dormant" in run_cli(database_url, "context", "show", "--tenant", "acme").stdout

    stored = run_cli(database_url, "context", "set", "--tenant", "acme", str(good))
    assert stored.returncode == 0, stored.stderr
    assert "revision 'rev-9'" in stored.stdout
    assert "ignored unknown keys: extra" in stored.stderr
    async with serve(settings, database_url) as served, mcp_session(served, key) as session:
        preview = body(await session.call_tool("get_operating_context", {}))
    assert preview["context_revision"] == "rev-9"
    assert preview["registry"]["enforce"] == "reject"

    shown = run_cli(database_url, "context", "show", "--tenant", "acme")
    assert shown.returncode == 0
    parsed = parse.parse(shown.stdout)
    assert parsed.context == parse.parse(CONTEXT).context
    assert parsed.warnings == ()

    cleared = run_cli(database_url, "context", "clear", "--tenant", "acme")
    assert cleared.returncode == 0
    assert "rev-9" in cleared.stdout
    tenant = next(t for t in await tenants.list_tenants(lib.db) if t.slug == "acme")
    assert await storage.get_context(lib, TenantId(tenant.id)) is None
    missing = run_cli(database_url, "context", "clear", "--tenant", "ghost")
    assert missing.returncode == 1
    assert "no tenant 'ghost'" in missing.stderr


def _read(spec: ToolSpec[Any], args: JsonObject) -> Any:
    """The parameters record of ``args`` as a call reads it: after the schema's defaults."""
    return spec.read(with_defaults(spec.input_schema, args))


async def _env(lib: Library, slug: str) -> ToolEnv:
    row = await tenants.create_tenant(lib.db, slug)
    caller = Caller(TenantId(row.id), slug, "key", "label", {"*": "read-write"})
    return ToolEnv(lib, caller)


async def test_gate_on_a_dormant_tenant_passes_auto_through_and_echoes_it(lib: Library) -> None:
    env = await _env(lib, "quiet")
    args = {"agent_id": "alpha", "project_id": "@auto", "message": {"content": "x"}}
    params = _read(STORE, {**args, "channel": ""})
    gated, notes, refusal = await project_gate.apply(STORE, env, params)
    assert refusal is None
    assert gated == params
    assert notes == {"resolved_project_id": "@auto"}


async def test_gate_with_reject_refuses_writes_in_the_spec_shapes_and_warns_reads(
    lib: Library,
) -> None:
    env = await _env(lib, "strict")
    await storage.set_context(lib.db, "strict", CONTEXT)
    message = "project_id 'zeta' not in registry (rev rev-9)"
    base = {"ok": False, "error": message, "operating_context_revision": "rev-9"}
    store_args = {"agent_id": "alpha", "project_id": "zeta", "message": {"content": "x"}}

    store_params = _read(STORE, {**store_args, "channel": ""})
    archive_params = _read(
        ARCHIVE_EPISODE,
        {
            **store_args,
            "summary": "s",
            "history": [],
            "keywords": "",
            "resolved": False,
            "channel": "",
        },
    )
    recall_params = _read(
        RECALL,
        {**store_args, "query": "", "limit": 10, "deep": False, "channel": "", "source_id": ""}
        | {"full_content": False, "exclude_contents": []},
    )
    _, _, store = await project_gate.apply(STORE, env, store_params)
    _, _, archive = await project_gate.apply(ARCHIVE_EPISODE, env, archive_params)
    read, notes, refusal = await project_gate.apply(RECALL, env, recall_params)

    assert store == {**base, "result": "rejected", "reason": message}
    assert archive == {**base, "episode_id": None}
    assert refusal is None
    assert read == recall_params
    assert notes == {"operating_context_warning": message}


async def test_gate_resolves_auto_and_leaves_omitted_or_empty_values_alone(lib: Library) -> None:
    env = await _env(lib, "mapped")
    await storage.set_context(lib.db, "mapped", CONTEXT)
    auto = _read(LIST_MEMORIES, {"agent_id": "alpha", "project_id": "@auto", "limit": 5})
    gated, notes, refusal = await project_gate.apply(LIST_MEMORIES, env, auto)
    assert refusal is None
    assert gated == dataclasses.replace(auto, project_id="atlas")
    assert notes == {"resolved_project_id": "atlas"}
    stored = {"message": {}, "channel": ""}
    empty = _read(STORE, {**stored, "agent_id": "alpha", "project_id": ""})  # omitted is '' too
    assert await project_gate.apply(STORE, env, empty) == (empty, {}, None)
    unmapped = _read(STORE, {**stored, "agent_id": "zed", "project_id": "@auto"})
    _, _, refused = await project_gate.apply(STORE, env, unmapped)
    assert refused is not None
    assert refused["error"].startswith("@auto has no [defaults] mapping for agent_id 'zed'")


def test_every_gated_tool_refuses_in_its_reserved_shape() -> None:
    extras: dict[str, JsonObject] = {
        "store": {"result": "rejected", "reason": "@auto"},
        "declare_associations": {
            "result": "rejected",
            "entities": [],
            "mentions": 0,
            "relations": [],
            "dropped": [],
        },
        "traverse": {"entities": [], "relations": []},
        "archive_episode": {"episode_id": None},
        "recall": {"messages": []},
        "recall_with_context": {"messages": []},
        "reconstruct": {"items": [], "returned_count": 0},
        "list_memories": {"memories": [], "count": 0},
        "list_episodes": {"episodes": [], "count": 0},
    }
    gated = {spec.name: spec for spec in tools.all_tools() if spec.project_gate}
    assert set(gated) == set(extras)
    for name, extra in extras.items():
        shaped = project_gate.refusal(gated[name], "@auto", "r1")
        expected = {"ok": False, "error": "@auto", "operating_context_revision": "r1"}
        assert shaped == {**expected, **extra}


async def test_initialize_serves_the_tenants_summary_as_instructions(
    lib: Library, served: Served
) -> None:
    key_a = await new_tenant(lib, "instr-a")
    key_b = await new_tenant(lib, "instr-b")
    await storage.set_context(
        lib.db, "instr-a", 'version = 1\n[instructions]\nsummary = "Be brief."\n'
    )
    async with mcp_session(served, key_a) as session:
        assert session.initialize_result is not None
        assert session.initialize_result.instructions == f"{SERVICE_INSTRUCTIONS}\n\nBe brief."
    async with mcp_session(served, key_b) as session:
        assert session.initialize_result is not None
        assert session.initialize_result.instructions == SERVICE_INSTRUCTIONS


async def test_server_discover_serves_the_same_instructions(lib: Library, served: Served) -> None:
    key_a = await new_tenant(lib, "disc-a")
    key_b = await new_tenant(lib, "disc-b")
    await storage.set_context(
        lib.db, "disc-a", 'version = 1\n[instructions]\nsummary = "Be brief."\n'
    )
    for mode in ("auto", "legacy"):
        async with modern_client(served, key_a, mode) as client:
            assert client.instructions == f"{SERVICE_INSTRUCTIONS}\n\nBe brief.", mode
        async with modern_client(served, key_b, mode) as client:
            assert client.instructions == SERVICE_INSTRUCTIONS, mode
    async with modern_client(served, key_a) as client:
        assert client.protocol_version == "2026-07-28"


def test_the_service_paragraph_tells_the_model_when_to_use_memory() -> None:
    """Always sent, before the operator's summary: what the service is and which tools a
    session calls when (docs/tools.md, "Instructions")."""
    for tool in ("recall", "reconstruct", "store", "archive_episode", "get_contents"):
        assert f"`{tool}`" in SERVICE_INSTRUCTIONS, tool
    assert "earlier sessions" in SERVICE_INSTRUCTIONS
    assert "maintenance" in SERVICE_INSTRUCTIONS
    assert len(SERVICE_INSTRUCTIONS) <= 600
