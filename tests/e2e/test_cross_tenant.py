"""Tenant B runs every tool against tenant A's ids, agents, projects and channels.

Nothing of A may be read, changed or revealed: B's answers about A's ids are the
answers for ids that do not exist, B's listings are empty, B's writes land in B,
and A's data is byte-for-byte the same afterwards. Every registered tool must
appear in PROBES, so a new tool cannot ship without its cross-tenant check.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from service.memory.library import Library
from tests.support import Agent, Served, new_tenant

SECRET = "tenant A secret: the vault code is 4711"
AGENT, PROJECT, CHANNEL = "shared-agent", "shared-project", "shared-channel"
A_FILE = "a-backup.jsonl"


async def seed(a: Agent) -> dict[str, int]:
    memory = await a.call(
        "store",
        agent_id=AGENT,
        project_id=PROJECT,
        channel=CHANNEL,
        message={"id": "msg-1", "content": SECRET, "metadata": {"k": "v"}},
    )
    locked = await a.call("store", agent_id=AGENT, message={"content": SECRET + " (locked)"})
    await a.call("lock_memory", memory_id=locked["id"])
    episode = await a.call(
        "archive_episode", agent_id=AGENT, summary=SECRET, project_id=PROJECT, channel=CHANNEL
    )
    await a.call("update_profile", agent_id=AGENT, profile=SECRET)
    graph = await a.call(
        "declare_associations",
        agent_id=AGENT,
        anchor_ref=f"mem:{memory['id']}",
        associations={
            "entities": [{"name": "Vault", "aliases": ["strongroom"]}],
            "relations": [
                {"subject": f"mem:{memory['id']}", "predicate": "guards", "object": "Vault"}
            ],
        },
    )
    return {
        "mem": memory["id"],
        "locked": locked["id"],
        "ep": episode["episode_id"],
        "entity": graph["entities"][0]["id"],
        "relation": graph["relations"][0],
    }


RECORDS = ("mem", "locked", "ep")
"""The keys of ``seed``'s ids that are record ids (the others are A's graph ids)."""


async def snapshot(a: Agent) -> str:
    parts = [
        await a.call("list_memories", limit=500),
        await a.call("list_episodes", limit=200),
        await a.call("get_profile", agent_id=AGENT),
        await a.call("traverse", agent_id=AGENT, entity="strongroom", max_hops=5),
    ]
    return json.dumps(parts, sort_keys=True)


def _contents_refs(ids: dict[str, int]) -> list[str]:
    return [f"mem:{ids['mem']}", f"ep:{ids['ep']}", f"mem:{ids['locked']}", f"ep:{ids['mem']}"]


def _range_objects(ids: dict[str, int]) -> list[dict[str, Any]]:
    """Range objects on A's rows: a span, a passage, a span with a revision."""
    return [
        {"ref": f"mem:{ids['mem']}", "span": [0, 5]},
        {"ref": f"ep:{ids['ep']}", "passage": 0},
        {"ref": f"mem:{ids['locked']}", "span": [1, 2], "revision": "000000000000"},
    ]


def probes(ids: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    """One or more calls per tool, aimed at A's ids and axis values."""
    mem, locked, ep = ids["mem"], ids["locked"], ids["ep"]
    return [
        ("resume_persistence", {}),
        ("get_operating_context", {}),
        (
            "reconstruct",
            {"agent_id": AGENT, "query": "vault code strongroom", "deep": True, "trace": True},
        ),
        (
            "reconstruct",
            {"agent_id": AGENT, "query": "", "project_id": PROJECT, "channel": CHANNEL},
        ),
        ("recall", {"agent_id": AGENT, "query": "vault code", "deep": True}),
        ("recall", {"agent_id": AGENT, "query": "", "project_id": PROJECT, "channel": CHANNEL}),
        (
            "recall_with_context",
            {
                "agent_id": AGENT,
                "query": "vault",
                "deep": True,
                "external_context": [{"role": "user", "content": "hi"}],
            },
        ),
        (
            "store",
            {
                "agent_id": AGENT,
                "project_id": PROJECT,
                "channel": CHANNEL,
                "message": {"id": "msg-1", "content": SECRET},
            },
        ),
        ("traverse", {"agent_id": AGENT, "entity": "Vault", "max_hops": 5}),
        (
            "declare_associations",
            {
                "agent_id": AGENT,
                "anchor_ref": f"mem:{mem}",
                "associations": {
                    "entities": [{"name": "Vault", "aliases": ["strongroom"]}],
                    "relations": [{"subject": f"ep:{ep}", "predicate": "p", "object": "Vault"}],
                },
                "retract": {
                    "relations": [ids["relation"]],
                    "mentions": [{"entity": ids["entity"], "ref": f"mem:{mem}"}],
                },
            },
        ),
        ("get_contents", {"agent_id": AGENT, "refs": _contents_refs(ids)}),
        ("get_contents", {"agent_id": AGENT, "refs": _range_objects(ids)}),
        ("get_profile", {"agent_id": AGENT}),
        ("update_profile", {"agent_id": AGENT, "profile": "B's own profile"}),
        ("archive_episode", {"agent_id": AGENT, "summary": "B's episode", "project_id": PROJECT}),
        ("list_memories", {}),
        ("list_memories", {"agent_id": AGENT, "project_id": PROJECT}),
        ("list_episodes", {}),
        ("list_episodes", {"agent_id": AGENT, "project_id": PROJECT}),
        ("update_memory", {"memory_id": mem, "content": "overwritten by B"}),
        ("update_memory", {"memory_id": mem, "content": "overwritten by B", "agent_id": AGENT}),
        ("lock_memory", {"memory_id": mem}),
        ("unlock_memory", {"memory_id": locked, "agent_id": AGENT}),
        ("delete_memory", {"memory_id": mem}),
        ("delete_memory", {"memory_id": locked, "agent_id": AGENT}),
        ("delete_episode", {"episode_id": ep}),
        ("delete_episode", {"episode_id": ep, "agent_id": AGENT}),
        ("get_queue_status", {}),
        ("check_health", {"fix": True}),  # A's rows are neither counted nor repaired
        ("check_health", {"agent_id": AGENT, "fix": True, "checks": ["duplicate_content"]}),
        ("deep_check", {"agent_id": AGENT, "fix": True}),
        ("migrate_channel_axis", {"dry_run": False, "globalize_unrecoverable": True}),
        ("import_memories", {"input_path": A_FILE, "target_agent_id": AGENT}),  # A's file name
        ("export_memories", {"agent_id": AGENT, "output_path": A_FILE}),  # lands in B's area
        ("import_memories", {"input_path": A_FILE, "dry_run": True}),  # B's own file
        (
            "merge_memories",
            {"source_agent_id": AGENT, "target_agent_id": "b-copy", "dry_run": True},
        ),
        ("merge_memories", {"source_agent_id": AGENT, "target_agent_id": "b-copy"}),
        ("calibrate_threshold", {"agent_id": AGENT}),  # A's embeddings are never sampled
        ("calibrate_threshold", {"agent_id": ""}),
        ("set_recall_precision", {"agent_id": AGENT, "precision": "strict"}),
        ("get_recall_precision", {"agent_id": AGENT}),
        ("delete_agent_data", {"agent_id": AGENT}),
        ("pause_persistence", {"ttl_seconds": 600}),  # keep last: B stays paused, A must not
        ("persistence_status", {}),
    ]


ID_KEYED = {"update_memory", "lock_memory", "unlock_memory", "delete_memory", "delete_episode"}


def _row_ids(body: Any) -> set[int]:
    """Every integer under an id-like key anywhere in a response."""
    found: set[int] = set()
    if isinstance(body, dict):
        for key, value in body.items():
            if key.endswith("id") and isinstance(value, int):
                found.add(value)
            found |= _row_ids(value)
    elif isinstance(body, list):
        for item in body:
            found |= _row_ids(item)
    return found


SECRET_BLIND = {
    "recall",
    "reconstruct",
    "recall_with_context",
    "export_memories",
    "import_memories",
    "merge_memories",
}


def _check(tool: str, answer: Any, ids: dict[str, int]) -> None:
    """What B may see: its own rows only, and nothing that proves A's rows exist."""
    echoing = {"get_contents", "declare_associations"}  # they echo refs they were given
    if tool not in ID_KEYED and tool not in echoing:
        refs = {int(n) for n in re.findall(r"(?:mem|ep):(\d+)", json.dumps(answer))}
        assert not (_row_ids(answer) | refs) & {ids[k] for k in RECORDS}, (tool, answer)
    if tool in SECRET_BLIND:
        assert SECRET not in json.dumps(answer), (tool, answer)
    if tool == "get_profile":
        assert answer == {"profile": ""}
    if tool == "get_contents":  # A's refs answer exactly like refs that do not exist
        ranged = [r["ref"] for r in _range_objects(ids)]  # never unresolved: missing first
        assert answer in (
            {"items": [], "missing": _contents_refs(ids), "count": 0},
            {"items": [], "missing": ranged, "count": 0},
        ), answer
    if tool == "store":
        assert answer["result"] == "stored"
    _check_graph(tool, answer, ids)
    if tool == "export_memories":  # B's own rows under the shared agent name, nothing of A
        assert (answer["memories"], answer["episodes"], answer["profiles"]) == (1, 1, 1)
    if tool == "import_memories":  # A's file is not found; B's own file adds nothing
        assert answer.get("imported_memories", 0) == 0, answer
    if tool == "merge_memories":
        assert (answer["merged_memories"], answer["merged_episodes"]) == (1, 1)
    _check_calibration(tool, answer)
    if tool == "delete_agent_data":  # only what B itself wrote under the shared names
        assert (answer["deleted_memories"], answer["deleted_episodes"]) == (1, 1)
        assert answer["deleted_profiles"] == 1


def _check_graph(tool: str, answer: Any, ids: dict[str, int]) -> None:
    """A's graph is not B's: B finds no such entity; A's records are not B's to anchor or
    relate, and A's relation and mention ids retract nothing."""
    if tool == "traverse":
        assert answer["entities"] == []
        assert answer["reason"] == "no_such_entity"
    if tool == "reconstruct":  # A's names expand nothing, A's rows are no candidates
        assert answer["items"] == []
        assert answer["shortfall_reason"] == "no_relevant_evidence"
        assert "cues" not in answer.get("trace", {})
    if tool != "declare_associations":
        return
    assert answer["retracted"] == {"relations": 0, "mentions": 0}
    assert answer["mentions"] == 0
    assert answer["relations"] == []
    assert answer["entities"][0]["created"] is True
    assert answer["dropped"] == [
        {"item": "anchor_ref", "reason": f"mem:{ids['mem']} is not a record of this agent"},
        {"item": "relations[0].subject", "reason": f"ep:{ids['ep']} is not a record of this agent"},
    ]


def _check_calibration(tool: str, answer: Any) -> None:
    """B's calibration samples only B's embeddings (none here) and sees no override of A."""
    if tool in ("calibrate_threshold", "set_recall_precision"):
        assert answer["error"] == "Need at least 10 embeddings, found 0", answer
    if tool == "get_recall_precision":
        assert answer["overridden"] is False


def _bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def _without_ids(body: Any, ids: dict[str, int]) -> str:
    text = json.dumps(body, sort_keys=True)
    for value in (ids[key] for key in RECORDS):
        text = re.sub(rf"\b{value}\b", "N", text)
    return text


async def test_tenant_b_cannot_read_change_or_detect_tenant_a(lib: Library, served: Served) -> None:
    a = Agent(served, await new_tenant(lib, "tenant-a"))
    b = Agent(served, await new_tenant(lib, "tenant-b"))
    ids = await seed(a)
    exported = await a.call("export_memories", agent_id=AGENT, output_path=A_FILE)
    before = await snapshot(a)
    registered = set(await b.tool_names())
    table = probes(ids)
    assert registered == {tool for tool, _ in table}, "every tool needs a probe in PROBES"
    unknown = {
        "mem": 10**12,
        "locked": 10**12 + 1,
        "ep": 10**12 + 2,
        "entity": 10**12 + 3,
        "relation": 10**12 + 4,
    }
    for (tool, args), (_, twin) in zip(table, probes(unknown), strict=True):
        answer = await b.call(tool, **args)
        _check(tool, answer, ids)
        if tool in ID_KEYED:
            assert answer["ok"] is False, (tool, answer)
            assert _without_ids(answer, ids) == _without_ids(await b.call(tool, **twin), unknown)
    assert await snapshot(a) == before
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        stolen = await http.get(exported["download_url"], headers=_bearer(b.key))
        own = await http.get(exported["download_url"], headers=_bearer(a.key))
    assert (stolen.status_code, stolen.json()) == (404, {"error": "not found"})
    assert SECRET + " (locked)" in own.text  # B's export of that name went to B's area
    # B's pause (among the last probes) must not pause A: A's writes still persist.
    assert (await b.call("persistence_status"))["paused"] is True
    assert (await a.call("persistence_status"))["paused"] is False
    after = await a.call("store", agent_id=AGENT, message={"content": "A writes on"})
    assert after["result"] == "stored"
