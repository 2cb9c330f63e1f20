"""Facts that change at their edges, over MCP/HTTP (docs/tools.md, "Facts that change";
docs/reliability.md): ``as_of`` in the future, before the first record, without a zone
(UTC) and malformed on every tool that takes it; a chain of 10,000 supersessions read,
extended, cut and checked through the tools (bounded walks, no recursion); a
``supersedes`` list of 100 refs on ``archive_episode``."""

from __future__ import annotations

from typing import Any

from service.db import agents
from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId
from tests.seeds import link_chain
from tests.support import Agent, Served, text

CHAIN = 10_000


async def _refused(client: Agent, tool: str, arguments: dict[str, Any]) -> None:
    result = await client.raw(tool, arguments)
    said = text(result)
    assert result.is_error or '"ok":false' in said, said
    assert "as_of" in said, said


async def _memory(client: Agent, content: str, **message: Any) -> int:
    stored = await client.call("store", agent_id="a", message={"content": content, **message})
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def test_as_of_edges_on_list_memories_and_traverse(client: Agent) -> None:
    await _memory(client, "lives in Lisbon", timestamp="2025-06-01T12:00:00+02:00")
    declared = await client.call(
        "declare_associations",
        agent_id="a",
        associations={"relations": [{"subject": "Ana", "predicate": "in", "object": "Lisbon"}]},
    )
    assert declared["dropped"] == []

    async def listed(as_of: str) -> list[str]:
        found = await client.call("list_memories", agent_id="a", as_of=as_of)
        return [row["content"] for row in found["memories"]]

    async def names(as_of: str) -> list[str]:
        found = await client.call("traverse", agent_id="a", entity="Ana", as_of=as_of)
        return sorted(e["name"] for e in found["entities"])

    assert await listed("2999-01-01") == ["lives in Lisbon"]  # the future: as known now
    assert await listed("2025-06-01T10:00:00") == ["lives in Lisbon"]  # no zone = UTC
    assert await listed("2025-06-01T09:59:59") == []  # 11:59:59 in +02:00: not yet
    assert await listed("1970-01-01") == []  # before the first memory
    assert await names("2999-01-01") == ["Ana", "Lisbon"]
    assert await names("1970-01-01") == ["Ana"]
    assert await names("2999-01-01T00:00:00") == ["Ana", "Lisbon"]
    for bad in ("yesterday", "2025-13-01", "2025-01-01T25:00", "0001-01-01T00:00+05:00", "x" * 65):
        await _refused(client, "list_memories", {"agent_id": "a", "as_of": bad})
        await _refused(client, "traverse", {"agent_id": "a", "entity": "Ana", "as_of": bad})
        await _refused(client, "recall", {"agent_id": "a", "query": "Lisbon", "as_of": bad})


async def _chain(lib: Library, slug: str, length: int = CHAIN) -> tuple[TenantId, list[int]]:
    """``length + 1`` memories of agent ``a``, one minute apart from 2020-01-01, each
    superseded by the next: one INSERT of the records and one of the relations (setup
    through the database, not the path under test)."""
    tenant = TenantId((await tenants.create_tenant(lib.db, slug)).id)
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        rows = await conn.fetch(
            "INSERT INTO memories (tenant_id, agent_id, content, timestamp_text, timestamp_at) "
            "SELECT $1, $2, 'address version ' || g, "
            "to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), t "
            "FROM generate_series(0, $3::int) g, "
            "LATERAL (SELECT timestamptz '2020-01-01 00:00+00' + g * interval '1 minute') x(t) "
            "RETURNING id",
            tenant,
            agent,
            length,
        )
        ids = sorted(int(row["id"]) for row in rows)
        await link_chain(conn, tenant, agent, ids)
    return tenant, ids


async def test_a_chain_of_10000_supersessions_is_read_extended_and_cut_through_mcp(
    lib: Library, served: Served
) -> None:
    _, ids = await _chain(lib, "chain")
    client = Agent(served, await tenants.create_key(lib.db, "chain", label="k"))
    head, first, middle = ids[-1], ids[0], ids[CHAIN // 2]

    # recall filters the rows it ranked (three times limit): the query names the version
    current = await client.call("recall", agent_id="a", query="version 10000", current_only=True)
    assert [row["ref"] for row in current["messages"]] == [f"mem:{head}"]
    at = "2020-01-04T11:20:30"  # minute 5,000 (no zone: UTC)
    then = await client.call("recall", agent_id="a", query="version 5000", as_of=at)
    assert [row["ref"] for row in then["messages"]] == [f"mem:{middle}"]
    listed = await client.call("list_memories", agent_id="a", current_only=True)
    assert [row["id"] for row in listed["memories"]] == [head]
    rebuilt = await client.call(
        "reconstruct", agent_id="a", query="version 10000", current_only=True
    )
    assert [item["head_ref"] for item in rebuilt["items"]] == [f"mem:{head}"]
    everything = await client.call("reconstruct", agent_id="a", query="address version")
    for item in everything["items"]:  # each superseded claim after its successor
        refs = [claim["ref"] for claim in item["claims"]]
        for position, claim in enumerate(item["claims"]):
            if "superseded_by" in claim and claim["superseded_by"] in refs:
                assert refs.index(claim["superseded_by"]) < position

    cycle = await client.call(
        "declare_associations",
        agent_id="a",
        associations={
            "relations": [
                {"subject": f"mem:{first}", "predicate": "supersedes", "object": f"mem:{head}"}
            ]
        },
    )
    assert cycle["relations"] == []
    assert cycle["dropped"][0]["reason"].startswith("would make a cycle")
    newest = await client.call(
        "store", agent_id="a", message={"content": "address now"}, supersedes=[f"mem:{head}"]
    )
    assert newest["supersedes"]["dropped"] == []
    cut = await client.call("delete_memory", agent_id="a", memory_id=middle)
    assert [(r["subject"], r["object"]) for r in cut["relinked"]] == [
        (f"mem:{middle + 1}", f"mem:{middle - 1}")
    ]
    fetched = await client.call("get_contents", agent_id="a", refs=[f"mem:{middle - 1}"])
    assert fetched["items"][0]["superseded_by"] == f"mem:{middle + 1}"


async def test_archive_episode_takes_64_of_a_100_ref_supersedes_list(client: Agent) -> None:
    olds = [await _memory(client, f"fact {i}") for i in range(70)]
    refs = [f"mem:{i}" for i in olds] + ["mem:999999"] * 30
    episode = await client.call(
        "archive_episode",
        agent_id="a",
        summary="the summary of all",
        history=[{"role": "user", "content": "x"}],
        supersedes=refs,
    )
    assert len(episode["supersedes"]["relations"]) == 64
    assert [d["item"] for d in episode["supersedes"]["dropped"]] == [
        f"supersedes[{i}]" for i in range(64, 100)
    ]
    assert {d["reason"] for d in episode["supersedes"]["dropped"]} == {"beyond the 64-item bound"}


async def test_current_only_finds_the_current_record_below_many_superseded_ones(
    lib: Library, served: Served
) -> None:
    """The 10,000 versions match the query equally: a recall that ranked first and left the
    superseded out afterwards would have nothing left; the recall statements leave them out
    before ranking, so the current one is found (docs/tools.md, "Facts that change")."""
    await _chain(lib, "buried")
    client = Agent(served, await tenants.create_key(lib.db, "buried", label="k"))
    found = await client.call("recall", agent_id="a", query="address version", current_only=True)
    assert [row["content"] for row in found["messages"]] == [f"address version {CHAIN}"]
    rebuilt = await client.call(
        "reconstruct", agent_id="a", query="address version", current_only=True
    )
    assert [item["content"] for item in rebuilt["items"]] == [f"address version {CHAIN}"]
    then = await client.call(  # as_of likewise (minute 5,000: no zone, UTC)
        "recall", agent_id="a", query="address version", as_of="2020-01-04T11:20:30"
    )
    assert [row["content"] for row in then["messages"]] == ["address version 5000"]


async def test_as_of_finds_the_version_valid_then_among_200_that_match_equally(
    lib: Library, served: Served
) -> None:
    """All 201 versions match the query equally and the answer is ranked newest first: a
    recall that ranked first and kept the rows valid ``as_of`` afterwards would find none
    of the 30 it ranked valid at minute 100; the recall statements leave out the rows
    written after ``as_of`` and those superseded by then before ranking, so the version
    valid then is found, by ``recall`` and by ``reconstruct``'s candidate recall
    (docs/tools.md, "Facts that change")."""
    _, ids = await _chain(lib, "asof", 200)
    client = Agent(served, await tenants.create_key(lib.db, "asof", label="k"))
    at = "2020-01-01T01:40:30Z"  # minute 100: version 100 holds from 01:40 to 01:41
    found = await client.call("recall", agent_id="a", query="address version", as_of=at)
    assert [row["ref"] for row in found["messages"]] == [f"mem:{ids[100]}"]
    rebuilt = await client.call("reconstruct", agent_id="a", query="address version", as_of=at)
    assert [item["head_ref"] for item in rebuilt["items"]] == [f"mem:{ids[100]}"]
    day = {"after": "2020-01-01", "before": "2020-01-01", "confidence": "sure"}
    cued = await client.call(  # the time cue's arm reads the same scope: no other version
        "recall", agent_id="a", query="address version", as_of=at, time_cue=day
    )
    assert [row["ref"] for row in cued["messages"]] == [f"mem:{ids[100]}"]


async def _episode_chain(lib: Library, slug: str, length: int) -> list[int]:
    """``length + 1`` episodes of agent ``a`` whose start_time is written one minute apart
    from 2020-01-01 (``...Z``), each superseded by the next, and one memory of 2019 that
    the first supersedes (setup through the database, like ``_chain``)."""
    tenant = TenantId((await tenants.create_tenant(lib.db, slug)).id)
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        rows = await conn.fetch(
            "INSERT INTO episodes (tenant_id, agent_id, summary, start_time) "
            "SELECT $1, $2, 'moving house session ' || g, "
            "to_char((timestamptz '2020-01-01 00:00+00' + g * interval '1 minute')"
            " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
            "FROM generate_series(0, $3::int) g RETURNING id",
            tenant,
            agent,
            length,
        )
        ids = sorted(int(row["id"]) for row in rows)
        memory = await conn.fetchval(
            "INSERT INTO memories (tenant_id, agent_id, content, timestamp_text, timestamp_at)"
            " VALUES ($1, $2, 'moving house plan', '2019-06-01', '2019-06-01+00') RETURNING id",
            tenant,
            agent,
        )
        await conn.execute(
            "INSERT INTO relations (tenant_id, agent_id, subject_kind, subject_id, predicate,"
            " object_kind, object_id) SELECT $1, $2, 'ep', n, 'supersedes', o.kind, o.id"
            " FROM unnest($3::bigint[], $4::text[], $5::bigint[]) x(n, kind, id),"
            " LATERAL (SELECT x.kind, x.id) o",
            tenant,
            agent,
            ids,
            ["mem", *["ep"] * length],
            [memory, *ids[:-1]],
        )
    return [memory, *ids]


async def test_as_of_reads_episodes_start_time_before_ranking(lib: Library, served: Served) -> None:
    """The same for a chain of 61 episodes (their own time is their start_time) that
    supersedes a memory: the statements read each episode's start_time and its
    successor's, and a memory's successor that is an episode (docs/tools.md, "Facts that
    change")."""
    refs = await _episode_chain(lib, "episodes", 60)
    client = Agent(served, await tenants.create_key(lib.db, "episodes", label="k"))

    async def recalled(as_of: str) -> list[str]:
        found = await client.call("recall", agent_id="a", query="moving house", as_of=as_of)
        return [row["ref"] for row in found["messages"]]

    assert await recalled("2020-01-01T00:30:30Z") == [f"ep:{refs[31]}"]
    assert await recalled("2019-12-31") == [f"mem:{refs[0]}"]
    assert await recalled("2019-01-01") == []
