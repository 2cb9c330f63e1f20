"""The declared graph in the library (docs/tools.md, "declare_associations"): a declaration
racing the deletion of its anchor leaves nothing dangling, and deleting records by any
path takes their mentions and relations with them (foreign keys, migration 0017)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from service.db.pool import Database
from service.memory import associations, episodes, health, tenants, traverse
from service.memory.library import Library
from service.memory.memories import edits, store
from service.memory.portability import export, import_
from service.memory.portability.outcomes import GraphRecords
from service.models import TenantId
from tests.seeds import new_seed

DANGLING = """
SELECT (SELECT count(*) FROM entity_mentions m
        WHERE m.ref_kind = 'mem' AND NOT EXISTS (
            SELECT 1 FROM memories x WHERE x.tenant_id = m.tenant_id AND x.id = m.ref_id))
     + (SELECT count(*) FROM relations r
        WHERE r.anchor_kind = 'mem' AND NOT EXISTS (
            SELECT 1 FROM memories x WHERE x.tenant_id = r.tenant_id AND x.id = r.anchor_id))
"""


async def _tenant(lib: Library) -> TenantId:
    return TenantId((await tenants.create_tenant(lib.db, "acme")).id)


async def _memory(lib: Library, tenant: TenantId, content: str) -> int:
    stored = await store.store(lib, tenant, store.StoreRequest("a", {"content": content}))
    assert isinstance(stored, store.Stored)
    return stored.memory_id


def _anchored(memory: int) -> associations.Declaration:
    return associations.Declaration(
        agent_id="a",
        anchor_ref=f"mem:{memory}",
        associations={
            "entities": [{"name": "E"}],
            "relations": [{"subject": "E", "predicate": "r", "object": "F"}],
        },
    )


async def _dangling(db: Database) -> int:
    async with db.admin_tx() as conn:
        return int(await conn.fetchval(DANGLING))


async def test_a_declaration_racing_the_delete_of_its_anchor_leaves_nothing_dangling(
    lib: Library,
) -> None:
    """The delete holds the anchor's row when the declaration checks it (still there) and
    writes its mention: the foreign-key check waits, then fails once the delete commits;
    the declaration runs again, finds the anchor gone, and drops it."""
    tenant = await _tenant(lib)
    memory = await _memory(lib, tenant, "anchor")
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute("DELETE FROM memories WHERE tenant_id = $1 AND id = $2", tenant, memory)
        racing = asyncio.create_task(associations.declare(lib, tenant, _anchored(memory)))
        await asyncio.sleep(0.5)
        assert not racing.done()  # waiting on the deleted row's lock
    declared = await racing
    assert declared.dropped == [
        associations.Dropped("anchor_ref", f"mem:{memory} is not a record of this agent")
    ]
    assert declared.mentions == 0
    assert len(declared.relations) == 1
    assert await _dangling(lib.db) == 0


async def test_many_declarations_racing_deletes_leave_nothing_dangling(lib: Library) -> None:
    tenant = await _tenant(lib)
    memories = [await _memory(lib, tenant, f"m{i}") for i in range(12)]

    async def delete(memory: int) -> None:
        await edits.delete_memory(lib, tenant, memory)

    declaring = [associations.declare(lib, tenant, _anchored(m)) for m in memories]
    results = await asyncio.gather(*declaring, *(delete(m) for m in memories))
    assert all(isinstance(r, associations.Declared) for r in results[: len(memories)])
    assert await _dangling(lib.db) == 0


async def _exported(lib: Library, tenant: TenantId, agent: str) -> list[dict[str, object]]:
    chunks: list[bytes] = []

    async def sink(chunk: bytes) -> None:
        chunks.append(chunk)

    await export.export_jsonl(lib, tenant, export.ExportRequest(agent_id=agent), sink)
    return [json.loads(line) for line in b"".join(chunks).splitlines()]


async def test_58_an_export_with_declarations_is_1_1_with_graph_lines(lib: Library) -> None:
    tenant = await _tenant(lib)
    memory = await _memory(lib, tenant, "anchor")
    declared = await associations.declare(
        lib,
        tenant,
        associations.Declaration(
            agent_id="a",
            anchor_ref=f"mem:{memory}",
            associations={
                "entities": [{"name": "Billing", "aliases": ["BillSvc"]}],
                "relations": [
                    {"subject": "Billing", "predicate": "Uses", "object": f"mem:{memory}"}
                ],
            },
        ),
    )
    lines = await _exported(lib, tenant, "a")
    header = lines[0]
    assert header["version"] == "cpersona-export/1.1"
    assert (header["entity_count"], header["mention_count"], header["relation_count"]) == (1, 1, 1)
    assert [line["_type"] for line in lines] == [
        "header",
        "memory",
        "entity",
        "mention",
        "relation",
    ]
    entity, mention, relation = lines[2:]
    assert entity["aliases"] == ["BillSvc"]
    assert (entity["name"], entity["agent_id"]) == ("Billing", "a")
    assert mention["entity"] == declared.entities[0].id
    assert mention["ref"] == f"mem:{memory}"
    assert relation["id"] == declared.relations[0]
    assert (relation["subject_kind"], relation["predicate"]) == ("entity", "uses")
    assert (relation["object_kind"], relation["object_id"]) == ("mem", memory)
    assert relation["anchor_ref"] == f"mem:{memory}"
    # an agent without declarations still exports 1.0, byte for byte as before
    await _memory(lib, tenant, "other")
    plain = await _exported(lib, tenant, "nobody")
    assert plain[0]["version"] == "cpersona-export/1.0"
    assert "entity_count" not in plain[0]


async def test_an_import_of_a_1_1_file_recreates_its_declarations(lib: Library) -> None:
    tenant = await _tenant(lib)
    memory = await _memory(lib, tenant, "anchor")
    episode = await episodes.archive_episode(
        lib, tenant, episodes.ArchiveRequest(agent_id="a", summary="the session")
    )
    await associations.declare(
        lib,
        tenant,
        associations.Declaration(
            agent_id="a",
            anchor_ref=f"mem:{memory}",
            associations={
                "entities": [{"name": "Billing", "aliases": ["BillSvc"]}],
                "relations": [
                    {"subject": "Billing", "predicate": "uses", "object": "Postgres"},
                    {
                        "subject": f"ep:{episode.episode_id}",
                        "predicate": "cites",
                        "object": "Billing",
                    },
                ],
            },
        ),
    )
    lines = await _exported(lib, tenant, "a")
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)

    async def chunks() -> AsyncIterator[bytes]:
        yield body

    request = import_.ImportRequest(target_agent_id="copy")
    result = await import_.import_jsonl(lib, tenant, chunks(), request)
    assert result.imported_graph == GraphRecords(entity=2, mention=1, relation=2)
    assert result.graph is None  # nothing the import could not re-create
    walked = await traverse.traverse(lib, tenant, traverse.TraverseRequest("copy", "billsvc"))
    names = {entity.name: entity for entity in walked.entities}
    assert set(names) == {"Billing", "Postgres"}
    assert names["Billing"].aliases == ["BillSvc"]
    (mention,) = names["Billing"].mentions
    assert mention != f"mem:{memory}"  # the copy's own row
    assert [r.predicate for r in walked.relations] == ["uses"]
    assert walked.relations[0].anchor_ref == mention
    again = await import_.import_jsonl(lib, tenant, chunks(), request)  # idempotent ids
    assert again.imported_graph == GraphRecords(entity=2, mention=1, relation=2)
    twice = await traverse.traverse(lib, tenant, traverse.TraverseRequest("copy", "billsvc"))
    assert [r.id for r in twice.relations] == [r.id for r in walked.relations]


async def _repair_carries(
    lib: Library, copy: str, kept: str, check: str, **copy_fields: Any
) -> None:
    """The row ``copy`` (declared on: a mention of E, ``copy about E``) becomes a duplicate
    of ``kept`` under the repair ``check``, which deletes it; its declarations move to
    ``kept``'s row and nothing dangles."""
    seed = await new_seed(lib)
    keeper = await seed.memory(kept)
    surplus = await seed.memory(copy, **copy_fields)
    await associations.declare(
        lib,
        seed.tenant_id,
        associations.Declaration(
            agent_id="a",
            anchor_ref=f"mem:{surplus}",
            associations={
                "entities": [{"name": "E"}],
                "relations": [{"subject": f"mem:{surplus}", "predicate": "about", "object": "E"}],
            },
        ),
    )
    await health.check_health(lib, seed.tenant_id, fix=True, checks=[check])
    assert await seed.memory_row(surplus) is None
    walked = await traverse.traverse(lib, seed.tenant_id, traverse.TraverseRequest("a", "E"))
    assert walked.entities[0].mentions == [f"mem:{keeper}"]
    async with lib.db.admin_tx() as conn:
        relation = await conn.fetchrow(
            "SELECT subject_kind, subject_id, anchor_kind, anchor_id FROM relations"
        )
    assert relation is not None
    assert tuple(relation) == ("mem", keeper, "mem", keeper)
    assert await _dangling(lib.db) == 0


async def test_the_duplicate_repair_carries_declarations_to_the_kept_row(lib: Library) -> None:
    """The channel-less row of a duplicate group stays; the copy in channel c1 goes."""
    await _repair_carries(lib, "same", "same", "duplicate_content", channel="c1")


async def test_a_rewrite_that_makes_a_duplicate_carries_declarations_to_the_kept_row(
    lib: Library,
) -> None:
    """discord_mention rewrites "<@123> same" to "same", which its bucket already holds:
    the rewritten row is deleted instead, and what was declared on it moves to the row
    that stays, as the duplicate repair does."""
    await _repair_carries(lib, "<@123> same", "same", "discord_mention")


async def test_rewrites_that_meet_each_other_carry_declarations_to_the_first(
    lib: Library,
) -> None:
    """Two rows rewritten to the same text: the lower id stays and takes the other's
    mentions."""
    seed = await new_seed(lib)
    first = await seed.memory("<@1> twin")
    second = await seed.memory("<@2> twin")
    await associations.declare(
        lib,
        seed.tenant_id,
        associations.Declaration(
            agent_id="a", anchor_ref=f"mem:{second}", associations={"entities": [{"name": "E"}]}
        ),
    )
    await health.check_health(lib, seed.tenant_id, fix=True, checks=["discord_mention"])
    assert await seed.memory_row(second) is None
    walked = await traverse.traverse(lib, seed.tenant_id, traverse.TraverseRequest("a", "E"))
    assert walked.entities[0].mentions == [f"mem:{first}"]
    assert await _dangling(lib.db) == 0
