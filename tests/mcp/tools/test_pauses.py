"""Persistence pause over MCP/HTTP (docs/tools.md, "pause_persistence"), acceptance 5, 71, 72, 75,
76, 76a.

Hosted form: a pause holds for one tenant, or for one session key inside it
(requests name their session with the X-CPersona-Session header); it lives in
Postgres, so every replica honours it at once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.config import Settings
from service.errors import InvalidInput, Refused
from service.mcp.registry import PausePolicy, skip_with
from service.memory import episodes, pauses
from service.memory.library import Library
from service.memory.memories import edits, store
from service.memory.operating_context import storage
from service.models import TenantId
from tests.support import Agent, Served, SessionAgent, mcp_session, new_tenant, serve, text

REASON = re.compile(
    r"^session no-persist mode active \((\d+m|\d+s) left\) — `(\w+)` skipped\. "
    r"Call `resume_persistence` (to re-enable|with this session_key to re-enable), "
    r"or wait for TTL to elapse\.$"
)


async def _tenant_id(lib: Library, slug: str) -> TenantId:
    async with lib.db.admin_tx() as conn:
        return TenantId(await conn.fetchval("SELECT id FROM tenants WHERE slug = $1", slug))


async def _snapshot(lib: Library) -> list[Any]:
    """Every stored row of every tenant (as the owner role)."""
    async with lib.db.admin_tx() as conn:
        return [
            [tuple(r) for r in await conn.fetch(query)]
            for query in (
                "SELECT id, agent_id, content, locked FROM memories ORDER BY id",
                "SELECT id, agent_id, summary FROM episodes ORDER BY id",
                "SELECT agent_id, content FROM profiles ORDER BY agent_id",
                "SELECT tenant_id, name FROM agents ORDER BY tenant_id, name",
                "SELECT tenant_id, agent_id, beta, vector_threshold FROM recall_calibration "
                "ORDER BY tenant_id, agent_id",
            )
        ]


async def _store(agent: Agent, content: str, name: str = "a") -> Any:
    return await agent.call("store", agent_id=name, message={"content": content})


def _skipped(answer: dict[str, Any], tool: str, **expected: Any) -> None:
    """``answer`` is ``tool``'s skipped body: ``expected`` keys plus the pause markers."""
    reason = answer.pop("reason")
    match = REASON.match(reason)
    assert match is not None, reason
    assert match.group(2) == tool
    assert answer == {**expected, "persisted": False, "dry_run": True}, (tool, answer)


async def _validation_error(agent: Agent, tool: str, **arguments: Any) -> str:
    result = await agent.raw(tool, arguments)
    assert result.is_error
    return text(result)


async def test_pause_bounds_defaults_and_response_shape(client: Agent) -> None:
    """Acceptance 5 (scope "tenant" instead of CPersona's "process")."""
    for ttl in (0, 86401, -5):
        message = await _validation_error(client, "pause_persistence", ttl_seconds=ttl)
        assert message.startswith("Input validation error: ")
    bad_key = await _validation_error(client, "pause_persistence", session_key="two words")
    assert bad_key.startswith("Input validation error: ")
    before = datetime.now(UTC)
    answer = await client.call("pause_persistence")
    assert set(answer) == {"paused", "expires_at", "ttl_seconds", "scope"}
    assert (answer["paused"], answer["ttl_seconds"], answer["scope"]) == (True, 1800, "tenant")
    expires = datetime.fromisoformat(answer["expires_at"])
    assert before + timedelta(seconds=1790) < expires < before + timedelta(seconds=1810)
    assert (await client.call("pause_persistence", ttl_seconds=86400))["ttl_seconds"] == 86400


async def test_listed_first_with_bounds_and_hints(client: Agent) -> None:
    async with mcp_session(client.served, client.key) as session:
        tools = (await session.list_tools()).tools
    names = ["pause_persistence", "resume_persistence", "persistence_status"]
    assert [tool.name for tool in tools[:3]] == names
    ttl = tools[0].input_schema["properties"]["ttl_seconds"]
    assert (ttl["default"], ttl["minimum"], ttl["maximum"]) == (1800, 1, 86400)
    status = tools[2].annotations
    assert status is not None
    assert status.read_only_hint is True


async def test_resume_and_status(client: Agent) -> None:
    """Acceptance 75."""
    idle = {"paused": False, "expires_at": None, "ttl_remaining_seconds": None, "scope": "tenant"}
    assert await client.call("persistence_status") == idle
    assert await client.call("resume_persistence") == {
        "paused": False,
        "was_active": False,
        "scope": "tenant",
    }
    paused = await client.call("pause_persistence", ttl_seconds=60)
    status = await client.call("persistence_status")
    assert status["paused"] is True
    assert status["scope"] == "tenant"
    assert status["expires_at"] == paused["expires_at"]
    assert 50 <= status["ttl_remaining_seconds"] <= 60
    assert await client.call("resume_persistence") == {
        "paused": False,
        "was_active": True,
        "scope": "tenant",
    }
    assert await client.call("persistence_status") == idle
    assert (await client.call("resume_persistence"))["was_active"] is False


async def _seed(client: Agent) -> dict[str, int]:
    memory = (await _store(client, "kept memory"))["id"]
    locked = (await _store(client, "locked memory"))["id"]
    await client.call("lock_memory", memory_id=locked)
    episode = await client.call("archive_episode", agent_id="a", summary="kept episode")
    await client.call("update_profile", agent_id="a", profile="kept profile")
    return {"mem": memory, "locked": locked, "ep": episode["episode_id"]}


def _write_calls(ids: dict[str, int]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(tool, arguments, expected skipped body without the markers) for every write tool."""
    mem, locked, ep = ids["mem"], ids["locked"], ids["ep"]
    stored = {"ok": True, "result": "skipped", "id": "no-persist", "embedded": False}
    archived = {
        "ok": True,
        "queued": False,
        "task_id": None,
        "episode_id": None,
        "id": "no-persist",
    }
    wiped = {
        "ok": True,
        "deleted_memories": 0,
        "deleted_profiles": 0,
        "deleted_episodes": 0,
        "deleted_pending_tasks": 0,
    }
    return [
        ("store", {"agent_id": "a", "message": {"content": "new fact"}}, stored),
        ("store", {"agent_id": "a", "message": {"content": ""}}, stored),  # 76a: pause first
        ("store", {"agent_id": "b", "message": {"content": "[Memory from x]"}}, stored),
        ("archive_episode", {"agent_id": "a", "summary": "new episode"}, archived),
        ("archive_episode", {"agent_id": "a", "summary": ""}, archived),
        (
            "update_memory",
            {"memory_id": mem, "content": "changed"},
            {"ok": True, "updated_id": None},
        ),
        ("update_memory", {"memory_id": mem, "content": "  "}, {"ok": True, "updated_id": None}),
        # pause first: a row that does not exist or is locked is not even looked up
        ("update_memory", {"memory_id": 99_999, "content": "x"}, {"ok": True, "updated_id": None}),
        ("update_memory", {"memory_id": 0, "content": "x"}, {"ok": True, "updated_id": None}),
        (
            "update_memory",
            {"memory_id": ids["locked"], "content": "x"},
            {"ok": True, "updated_id": None},
        ),
        ("delete_memory", {"memory_id": mem}, {"ok": True, "deleted_id": None}),
        ("delete_episode", {"episode_id": ep}, {"ok": True, "deleted_id": None}),
        ("lock_memory", {"memory_id": mem}, {"ok": True, "locked_id": None}),
        ("unlock_memory", {"memory_id": locked}, {"ok": True, "unlocked_id": None}),
        (
            "update_profile",
            {"agent_id": "a", "profile": "changed"},
            {"ok": True, "profiles_updated": 0},
        ),
        ("delete_agent_data", {"agent_id": "a"}, {**wiped, "agent_id": "a"}),
        ("delete_agent_data", {"agent_id": ""}, {**wiped, "agent_id": ""}),
    ]


async def test_every_write_tool_is_skipped_and_writes_nothing(lib: Library, client: Agent) -> None:
    """Acceptance 71, 72 and the store half of 76a, for every write tool."""
    ids = await _seed(client)
    before = await _snapshot(lib)
    await client.call("pause_persistence", ttl_seconds=600)
    for tool, arguments, expected in _write_calls(ids):
        _skipped(await client.call(tool, **arguments), tool, **expected)
    assert await _snapshot(lib) == before
    listed = await client.call("list_memories", agent_id="a")
    assert sorted(row["content"] for row in listed["memories"]) == ["kept memory", "locked memory"]
    assert (await client.call("list_episodes", agent_id="a"))["count"] == 1
    assert await client.call("get_profile", agent_id="a") == {"profile": "kept profile"}
    got = await client.call("get_contents", agent_id="a", refs=[f"mem:{ids['mem']}"])
    assert got["count"] == 1
    await client.call("resume_persistence")
    assert (await _store(client, "new fact"))["result"] == "stored"
    assert (await client.call("delete_memory", memory_id=ids["mem"]))["deleted_id"] == ids["mem"]


OTHER_WRITES: list[tuple[str, dict[str, Any]]] = [
    ("import_memories", {"input_path": "missing.jsonl"}),  # pause first: no file needed
    ("merge_memories", {"source_agent_id": "a", "target_agent_id": "c", "mode": "move"}),
    ("calibrate_threshold", {"agent_id": "a"}),
    ("set_recall_precision", {"agent_id": "a", "precision": "strict"}),
]


async def test_portability_and_calibration_writes_are_skipped(lib: Library, client: Agent) -> None:
    """The write tools other modules declare a PausePolicy for: skipped, nothing written."""
    await _seed(client)
    before = await _snapshot(lib)
    await client.call("pause_persistence")
    for tool, arguments in OTHER_WRITES:
        answer = await client.call(tool, **arguments)
        assert (answer["ok"], answer["persisted"], answer["dry_run"]) == (True, False, True)
        match = REASON.match(answer["reason"])
        assert match is not None, answer
        assert match.group(2) == tool
    # a dry run writes nothing, so it runs for real
    dry = await client.call(
        "merge_memories", source_agent_id="a", target_agent_id="c", dry_run=True
    )
    assert "persisted" not in dry
    assert (dry["dry_run"], dry["merged_memories"]) == (True, 2)
    assert await _snapshot(lib) == before


async def test_skipped_reason_counts_down_minutes_then_seconds(client: Agent) -> None:
    await client.call("pause_persistence", ttl_seconds=150)
    reason = (await _store(client, "x"))["reason"]
    assert reason.startswith("session no-persist mode active (2m left) — `store` skipped.")
    await client.call("pause_persistence", ttl_seconds=45)
    reason = (await client.call("lock_memory", memory_id=1))["reason"]
    match = REASON.match(reason)
    assert match is not None, reason
    assert re.fullmatch(r"(4[0-5])s", match.group(1)), reason


async def test_a_pause_of_one_tenant_never_touches_another(lib: Library, served: Served) -> None:
    a = Agent(served, await new_tenant(lib, "tenant-a"))
    b = Agent(served, await new_tenant(lib, "tenant-b"))
    await a.call("pause_persistence", ttl_seconds=600)
    assert (await _store(a, "a's fact"))["persisted"] is False
    assert (await _store(b, "b's fact"))["result"] == "stored"
    assert (await b.call("persistence_status"))["paused"] is False
    assert (await b.call("resume_persistence"))["was_active"] is False
    assert (await a.call("persistence_status"))["paused"] is True  # B's resume left A paused
    await b.call("pause_persistence", ttl_seconds=600)
    assert (await a.call("resume_persistence"))["was_active"] is True
    assert (await _store(a, "a's fact"))["result"] == "stored"
    assert (await _store(b, "b's second fact"))["persisted"] is False
    assert (await b.call("persistence_status"))["paused"] is True


async def test_a_session_pause_holds_only_for_that_session(lib: Library, served: Served) -> None:
    key = await new_tenant(lib, "acme")
    plain, s1, s2 = (
        Agent(served, key),
        SessionAgent(served, key, "s1"),
        SessionAgent(served, key, "s2"),
    )
    answer = await plain.call("pause_persistence", ttl_seconds=600, session_key="s1")
    assert (answer["scope"], answer["session_key"], answer["ttl_seconds"]) == ("session", "s1", 600)
    skipped = await _store(s1, "from s1")
    assert skipped["persisted"] is False
    assert "with this session_key" in skipped["reason"]
    assert (await _store(s2, "from s2"))["result"] == "stored"
    assert (await _store(plain, "from nobody"))["result"] == "stored"
    own = await s2.call("persistence_status", session_key="s1")
    assert (own["paused"], own["scope"], own["session_key"], own["tenant_paused"]) == (
        True,
        "session",
        "s1",
        False,
    )
    assert (await plain.call("persistence_status"))["paused"] is False
    await plain.call("pause_persistence", ttl_seconds=60)
    for agent, content in ((plain, "p"), (s1, "one"), (s2, "two")):
        assert (await _store(agent, content))["persisted"] is False
    other = await plain.call("persistence_status", session_key="s2")
    assert (other["paused"], other["tenant_paused"]) == (False, True)
    assert (await s1.call("resume_persistence"))["was_active"] is True  # the tenant-wide one
    assert (await _store(s1, "one"))["persisted"] is False  # its own pause still holds
    assert (await plain.call("resume_persistence", session_key="s1"))["was_active"] is True
    assert (await _store(s1, "one"))["result"] == "stored"


async def test_session_header_never_crosses_tenants(lib: Library, served: Served) -> None:
    a_key, b_key = await new_tenant(lib, "tenant-a"), await new_tenant(lib, "tenant-b")
    await Agent(served, a_key).call("pause_persistence", session_key="shared")
    assert (await _store(SessionAgent(served, a_key, "shared"), "a"))["persisted"] is False
    assert (await _store(SessionAgent(served, b_key, "shared"), "b"))["result"] == "stored"


async def test_an_expired_pause_is_over(lib: Library, client: Agent) -> None:
    await client.call("pause_persistence", ttl_seconds=600)
    await client.call("pause_persistence", ttl_seconds=600, session_key="old")
    async with lib.db.admin_tx() as conn:
        await conn.execute("UPDATE persistence_pauses SET expires_at = now() - interval '1 s'")
    assert (await client.call("persistence_status"))["paused"] is False
    assert (await _store(client, "after expiry"))["result"] == "stored"
    assert (await client.call("resume_persistence"))["was_active"] is False
    await client.call("pause_persistence", ttl_seconds=5, session_key="new")
    async with lib.db.admin_tx() as conn:  # a new pause sweeps the tenant's expired rows
        keys = await conn.fetch("SELECT session_key FROM persistence_pauses")
    assert [row["session_key"] for row in keys] == ["new"]


async def test_pausing_again_replaces_the_ttl(client: Agent) -> None:
    long = await client.call("pause_persistence", ttl_seconds=3600)
    short = await client.call("pause_persistence", ttl_seconds=60)
    status = await client.call("persistence_status")
    assert short["expires_at"] < long["expires_at"]
    assert status["expires_at"] == short["expires_at"]
    assert status["ttl_remaining_seconds"] <= 60


async def test_replicas_share_one_pause(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "acme")
    async with serve(settings, database_url) as one, serve(settings, database_url) as two:
        first, second = Agent(one, key), Agent(two, key)
        await first.call("pause_persistence", ttl_seconds=600)
        assert (await _store(second, "via replica two"))["persisted"] is False
        assert (await second.call("persistence_status"))["paused"] is True
        assert (await second.call("resume_persistence"))["was_active"] is True
        assert (await _store(first, "via replica one"))["result"] == "stored"


async def test_pause_and_resume_need_read_write_on_every_agent(
    lib: Library, served: Served
) -> None:
    reader = Agent(served, await new_tenant(lib, "acme", grants={"*": "read"}))
    denied = await reader.call("pause_persistence", session_key="mine")
    assert denied == {
        "ok": False,
        "error": "permission_denied",
        "tool": "pause_persistence",
        "agent_id": "*",
        "required": "read-write",
        "client_id": "acme-key",
    }
    assert (await reader.call("resume_persistence"))["error"] == "permission_denied"
    assert (await reader.call("persistence_status"))["paused"] is False


async def test_the_project_gate_runs_before_the_pause(lib: Library, client: Agent) -> None:
    context = '[registry]\nproject_ids = ["atlas"]\nenforce = "reject"\n'
    await storage.set_context(lib.db, "acme", f'version = 1\ncontext_revision = "r1"\n{context}')
    await client.call("pause_persistence")
    refused = await client.call("store", agent_id="a", project_id="nope", message={"content": "x"})
    assert (refused["ok"], refused["result"]) == (False, "rejected")
    allowed = await client.call("store", agent_id="a", project_id="atlas", message={"content": "x"})
    assert allowed["persisted"] is False


async def test_library_rules(lib: Library) -> None:
    await new_tenant(lib, "acme")
    tenant = await _tenant_id(lib, "acme")
    assert (await pauses.pause(lib, tenant, 999_999)).ttl_seconds == pauses.MAX_TTL_SECONDS
    for bad_ttl in (0, True):
        with pytest.raises(InvalidInput):
            await pauses.pause(lib, tenant, bad_ttl)
    with pytest.raises(InvalidInput):
        await pauses.pause(lib, tenant, 60, session_key="x" * 129)
    await pauses.pause(lib, tenant, 30, session_key="s")
    longest = await pauses.active_pause(lib, tenant, "s")
    assert longest is not None
    assert longest.scope == "tenant"
    await pauses.resume(lib, tenant)
    own = await pauses.active_pause(lib, tenant, "s")
    assert own is not None
    assert (own.scope, own.session_key) == ("session", "s")
    assert await pauses.active_pause(lib, tenant) is None
    assert await pauses.active_pause(lib, tenant, "bad key") is None


async def _guarded_store(
    lib: Library, tenant: TenantId, content: str, session: str = ""
) -> store.StoreOutcome:
    request = store.StoreRequest(agent_id="fresh", message={"content": content})
    return await store.store(lib, tenant, request, pauses.PauseGuard(session))


async def _guarded_store_is_paused(lib: Library, tenant: TenantId, session: str = "") -> None:
    """Under a pause a guarded store raises WritePaused for good and bad input alike
    (the pause is read before the refusals) and writes nothing, not even its agent."""
    before = await _snapshot(lib)
    for content in ("a new fact", ""):
        with pytest.raises(pauses.WritePaused) as raised:
            await _guarded_store(lib, tenant, content, session)
        assert raised.value.active.remaining_seconds > 0
    assert await _snapshot(lib) == before


async def test_a_guarded_store_reads_the_pause_inside_its_write(lib: Library) -> None:
    await new_tenant(lib, "acme")
    tenant = await _tenant_id(lib, "acme")
    await pauses.pause(lib, tenant, 60, session_key="s1")
    await _guarded_store_is_paused(lib, tenant, "s1")
    assert isinstance(await _guarded_store(lib, tenant, "from s2", "s2"), store.Stored)
    await pauses.pause(lib, tenant, 60)
    await _guarded_store_is_paused(lib, tenant, "s2")
    unguarded = store.StoreRequest(agent_id="a", message={"content": "a caller's own check"})
    assert isinstance(await store.store(lib, tenant, unguarded), store.Stored)
    await pauses.resume(lib, tenant)
    await pauses.resume(lib, tenant, "s1")
    with pytest.raises(Refused):  # no pause: the refusal again
        await _guarded_store(lib, tenant, "")
    assert isinstance(await _guarded_store(lib, tenant, "after resume"), store.Stored)


async def test_a_guarded_store_that_waits_for_its_vector_obeys_the_pause(
    local_lib: Library,
) -> None:
    """With an inline timeout the pause is read in the dedup probe's transaction,
    before anything is embedded."""
    await new_tenant(local_lib, "acme")
    tenant = await _tenant_id(local_lib, "acme")
    await pauses.pause(local_lib, tenant, 60)
    await _guarded_store_is_paused(local_lib, tenant)
    await pauses.resume(local_lib, tenant)
    stored = await _guarded_store(local_lib, tenant, "embedded before its commit")
    assert isinstance(stored, store.Stored), stored
    assert stored.embedded is True


async def _guarded_edits_are_paused(lib: Library, tenant: TenantId, memory_id: int) -> None:
    """Under a pause a guarded archive and update raise WritePaused for good and bad
    input alike, and write nothing."""
    before = await _snapshot(lib)
    for summary in ("a new episode", ""):
        request = episodes.ArchiveRequest(agent_id="fresh", summary=summary)
        with pytest.raises(pauses.WritePaused):
            await episodes.archive_episode(lib, tenant, request, pauses.PauseGuard())
    for target, content in ((memory_id, "changed"), (memory_id, " "), (0, "x"), (99_999, "x")):
        with pytest.raises(pauses.WritePaused):
            await edits.update_memory(lib, tenant, target, content, "", pauses.PauseGuard())
    assert await _snapshot(lib) == before


@pytest.mark.parametrize("inline", [False, True], ids=["write-behind", "inline-embedding"])
async def test_guarded_archive_and_update_read_the_pause_in_their_own_transaction(
    lib: Library, local_lib: Library, inline: bool
) -> None:
    """archive_episode and update_memory obey the pause like store (one transaction per
    call); with an inline timeout they obey it before anything is embedded."""
    lib = local_lib if inline else lib
    await new_tenant(lib, "acme")
    tenant = await _tenant_id(lib, "acme")
    stored = await _guarded_store(lib, tenant, "an old fact")
    assert isinstance(stored, store.Stored), stored
    memory_id = stored.memory_id
    await pauses.pause(lib, tenant, 60)
    await _guarded_edits_are_paused(lib, tenant, memory_id)
    await pauses.resume(lib, tenant)
    request = episodes.ArchiveRequest(agent_id="fresh", summary="after the pause")
    archived = await episodes.archive_episode(lib, tenant, request, pauses.PauseGuard())
    assert archived.episode_id > 0
    updated = await edits.update_memory(lib, tenant, memory_id, "new", "", pauses.PauseGuard())
    assert updated.memory_id == memory_id
    with pytest.raises(Refused):  # no pause: the refusal again
        await edits.update_memory(lib, tenant, memory_id, " ", "", pauses.PauseGuard())


async def test_validate_first_tools_refuse_bad_input_and_others_skip_it(client: Agent) -> None:
    """Acceptance 76 and the calibrate half of 76a."""
    await client.call("pause_persistence")
    refused = await client.call("calibrate_threshold", agent_id="a", percentile=500)
    assert refused == {
        "ok": False,
        "error": "percentile must be in (0, 1] (or a percent 1-100), got 500.0",
    }
    refused = await client.call("set_recall_precision", agent_id="a", precision="bogus")
    assert refused["ok"] is False
    assert "Unknown precision 'bogus'" in refused["error"]
    same = await client.call("merge_memories", source_agent_id="a", target_agent_id="a")
    assert same["persisted"] is False  # pause first: a self-merge gets the skipped body


def test_an_in_write_policy_must_have_the_body_it_answers_with() -> None:
    with pytest.raises(ValueError, match="skipped body"):
        PausePolicy(body=None, in_write=True)
    assert skip_with({"ok": True}, in_write=True).in_write
