"""Export from one tenant, import into another: nothing is lost (small scale).

Content, metadata, sources, caller timestamps, created_at (to the second, the
format's resolution), locks, recall statistics, episodes, profiles and — with
include_embeddings — the vectors bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import httpx
from pgvector import Vector

from service.memory import tenants
from service.memory.library import Library
from service.memory.portability import import_, jsonl
from service.models import TenantId
from tests.seeds import WidthOnly
from tests.support import Agent, Served, new_tenant

MEMORY_ROWS = """
SELECT a.name, m.msg_id, m.content, m.source, m.timestamp_text, m.timestamp_at, m.metadata,
       date_trunc('second', m.created_at) AS created, m.locked, m.recall_count,
       date_trunc('second', m.last_recalled_at) AS recalled, m.embedding::text AS vector,
       m.project_id, m.channel
FROM memories m JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
JOIN tenants t ON t.id = m.tenant_id WHERE t.slug = $1 ORDER BY m.id
"""
EPISODE_ROWS = """
SELECT a.name, e.summary, e.keywords, e.start_time, e.end_time, e.resolved, e.project_id,
       e.channel, date_trunc('second', e.created_at) AS created, e.embedding::text AS vector
FROM episodes e JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = $1 ORDER BY e.id
"""
PROFILE_ROWS = """
SELECT a.name, p.user_id, p.content, p.project_id, date_trunc('second', p.updated_at) AS updated
FROM profiles p JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
JOIN tenants t ON t.id = p.tenant_id WHERE t.slug = $1 ORDER BY a.name
"""


async def _seed(a: Agent, lib: Library) -> None:
    messages: list[dict[str, Any]] = [
        {
            "id": "m1",
            "content": "Ada drinks tea",
            "timestamp": "2026-01-02T03:04:05.678+09:00",
            "source": {"type": "User", "id": "u1", "name": "Ada"},
            "metadata": {"nested": {"list": [1, 2.5, None, True], "text": "é 茶 🧠"}},
        },
        {"content": "記憶サービス " * 100, "timestamp": "not a date"},
        {"content": "x" * 16_000},
        {"content": "no source", "source": {"System": "cron"}},
    ]
    for i, message in enumerate(messages):
        project, channel = ("proj", "chan") if i % 2 else ("", "")
        await a.call(
            "store", agent_id="alpha", message=message, project_id=project, channel=channel
        )
    await a.call("store", agent_id="beta", message={"content": "beta fact"})
    await a.call("lock_memory", memory_id=(await _ids(a))[0])
    await a.call(
        "archive_episode",
        agent_id="alpha",
        summary="met Ada",
        keywords="tea ada",
        resolved=True,
        project_id="proj",
        channel="chan",
        history=[{"timestamp": "2026-01-01T00:00:00Z"}],
    )
    await a.call("archive_episode", agent_id="beta", summary="beta session")
    await a.call("update_profile", agent_id="alpha", profile="likes tea")
    rng = random.Random(7)
    async with lib.db.admin_tx() as conn:
        for select, update in (
            ("SELECT id FROM memories", "UPDATE memories SET embedding = $2 WHERE id = $1"),
            ("SELECT id FROM episodes", "UPDATE episodes SET embedding = $2 WHERE id = $1"),
        ):
            for (row_id,) in await conn.fetch(select):
                vector = Vector([rng.uniform(-1, 1) for _ in range(384)])
                await conn.execute(update, row_id, vector)
        await conn.execute(
            "UPDATE memories SET recall_count = 7, last_recalled_at = now() - interval '1 day'"
            " WHERE content = 'Ada drinks tea'"
        )


async def _ids(a: Agent) -> list[int]:
    rows = (await a.call("list_memories", agent_id="alpha"))["memories"]
    return sorted(row["id"] for row in rows)


async def _rows(lib: Library, slug: str) -> list[list[Any]]:
    async with lib.db.admin_tx() as conn:
        return [
            [dict(r) for r in await conn.fetch(query, slug)]
            for query in (MEMORY_ROWS, EPISODE_ROWS, PROFILE_ROWS)
        ]


def _records(body: bytes) -> list[dict[str, Any]]:
    """Export lines without what legitimately differs (row ids, export time)."""
    records = [json.loads(line) for line in body.splitlines()]
    for record in records:
        record.pop("id", None)
        record.pop("exported_at", None)
    return records


async def test_export_then_import_into_another_tenant_is_lossless(
    lib: Library, served: Served
) -> None:
    a = Agent(served, await new_tenant(lib, "source"))
    b = Agent(served, await new_tenant(lib, "copy"))
    await _seed(a, lib)
    exported = await a.call(
        "export_memories", agent_id="", output_path="full.jsonl", include_embeddings=True
    )
    assert (exported["memories"], exported["episodes"], exported["profiles"]) == (5, 2, 1)
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        body = (await http.get(exported["download_url"], headers=_auth(a.key))).content
        await http.post("/v1/files/full.jsonl", content=body, headers=_auth(b.key))
    result = await b.call("import_memories", input_path="full.jsonl")
    assert result == {
        "ok": True,
        "dry_run": False,
        "imported_memories": 5,
        "skipped_memories": 0,
        "imported_episodes": 2,
        "skipped_episodes": 0,
        "profile_updated": True,
    }
    original, restored = await _rows(lib, "source"), await _rows(lib, "copy")
    assert restored == original
    assert all(row["vector"] for row in original[0] + original[1])
    assert original[0][0]["recall_count"] == 7
    again = await b.call(
        "export_memories", agent_id="", output_path="again.jsonl", include_embeddings=True
    )
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        second = (await http.get(again["download_url"], headers=_auth(b.key))).content
    assert _records(second) == _records(body)


def _auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def _import_lines(lib: Library, tenant: str, *records: dict[str, Any]) -> None:
    row = await tenants.create_tenant(lib.db, tenant)

    async def chunks() -> Any:
        yield b"".join(json.dumps(record).encode() + b"\n" for record in records)

    await import_.import_jsonl(lib, TenantId(row.id), chunks(), import_.ImportRequest())


async def test_import_keeps_the_model_of_vectors_of_the_configured_width(
    lib: Library,
) -> None:
    """Issue 10 (11): imported rows got embedding_model NULL, so a later reembed recomputed
    vectors the file already carried. A vector of the configured model's declared width
    now keeps the model's name and is not queued; one of another width is kept but
    queued, so the worker replaces it."""
    configured = Library(
        lib.db, dataclasses.replace(lib.settings, embedding_mode="http"), WidthOnly(4)
    )
    await _import_lines(
        configured,
        "vectors",
        {"_type": "memory", "agent_id": "v", "content": "right width",
         "embedding_b64": jsonl.encode_embedding([0.5, 0.5, 0.5, 0.5])},
        {"_type": "memory", "agent_id": "v", "content": "other width",
         "embedding_b64": jsonl.encode_embedding([0.6, 0.8])},
        {"_type": "memory", "agent_id": "v", "content": "no vector"},
        {"_type": "episode", "agent_id": "v", "summary": "an episode",
         "embedding_b64": jsonl.encode_embedding([0.5, 0.5, 0.5, 0.5])},
    )  # fmt: skip
    async with lib.db.admin_tx() as conn:
        rows = await conn.fetch(
            "SELECT content, embedding_model, embedding_dim FROM memories ORDER BY id"
        )
        episode = await conn.fetchrow("SELECT embedding_model FROM episodes")
        jobs = await conn.fetch(
            "SELECT m.content FROM embedding_jobs j JOIN memories m ON m.id = j.item_id "
            "ORDER BY m.id"
        )
    assert [(r["content"], r["embedding_model"], r["embedding_dim"]) for r in rows] == [
        ("right width", "width-only", 4),
        ("other width", None, 2),
        ("no vector", None, None),
    ]
    assert episode is not None
    assert episode["embedding_model"] == "width-only"
    assert [j["content"] for j in jobs] == ["other width", "no vector"]
