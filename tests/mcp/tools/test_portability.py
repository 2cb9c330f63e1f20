"""export_memories / import_memories over MCP/HTTP (docs/portability.md, "The format";
docs/portability.md, "Import rules"), acceptance 80-83.

Each test runs the real app with its own data directory (the export areas live
there) and embeddings off, so rows only change when a test changes them.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import httpx

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.memory.portability import files
from service.models import TenantId
from tests.support import Agent, Served, new_tenant, serve

CPERSONA_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
MEMORY_KEYS = [
    "_type",
    "id",
    "agent_id",
    "msg_id",
    "content",
    "source",
    "timestamp",
    "metadata",
    "created_at",
    "project_id",
    "channel",
    "locked",
    "recall_count",
    "last_recalled_at",
]
EPISODE_KEYS = [
    "_type",
    "id",
    "agent_id",
    "summary",
    "keywords",
    "start_time",
    "end_time",
    "created_at",
    "resolved",
    "project_id",
    "channel",
]
HEADER_KEYS = [
    "_type",
    "version",
    "agent_id",
    "exported_at",
    "memory_count",
    "episode_count",
    "has_profile",
    "profile_count",
]


async def seed(client: Agent, agent: str = "a") -> None:
    """Three memories (one locked), two episodes, a profile; and one row of agent z."""
    first = await client.call(
        "store",
        agent_id=agent,
        project_id="p",
        channel="c",
        message={
            "id": "m1",
            "content": "Ada likes tea",
            "timestamp": "2026-01-02T03:04:05Z",
            "source": {"User": "ada"},
            "metadata": {"k": [1, "é"]},
        },
    )
    await client.call("store", agent_id=agent, message={"content": "Bob likes 茶"})
    await client.call("store", agent_id=agent, message={"content": "locked fact"})
    await client.call("lock_memory", memory_id=first["id"])
    history = [{"timestamp": "2026-01-01T00:00:00Z"}, {"timestamp": "2026-01-03T00:00:00Z"}]
    await client.call("archive_episode", agent_id=agent, summary="s1", history=history)
    await client.call("archive_episode", agent_id=agent, summary="s2", keywords="k", resolved=True)
    await client.call("update_profile", agent_id=agent, profile="a profile")
    await client.call("store", agent_id="z", message={"content": "other agent"})


async def download(served: Served, key: str, url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.get(served.base_url + url, headers={"authorization": f"Bearer {key}"})


async def upload(served: Served, key: str, name: str, body: bytes) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(
            f"{served.base_url}/v1/files/{name}",
            content=body,
            headers={"authorization": f"Bearer {key}"},
        )


def lines(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines()]


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


async def test_export_header_counts_match_the_records_and_the_format_is_cpersonas(
    client: Agent, served: Served
) -> None:
    await seed(client)
    body = await client.call("export_memories", agent_id="a", output_path="backup.jsonl")
    assert {k: body[k] for k in ("ok", "path", "memories", "episodes", "profiles")} == {
        "ok": True,
        "path": "backup.jsonl",
        "memories": 3,
        "episodes": 2,
        "profiles": 1,
    }
    assert body["download_url"].startswith("/v1/files/")
    assert body["expires_at"].endswith("+00:00")
    response = await download(served, client.key, body["download_url"])
    assert response.status_code == 200
    records = lines(response.content)
    for raw, record in zip(response.content.splitlines(), records, strict=True):
        assert raw == json.dumps(record, ensure_ascii=False).encode()  # byte-compatible
    header, rows = records[0], records[1:]
    assert list(header) == HEADER_KEYS
    assert header["version"] == "cpersona-export/1.0"
    assert (header["memory_count"], header["episode_count"], header["profile_count"]) == (3, 2, 1)
    assert header["has_profile"] is True
    kinds = [row["_type"] for row in rows]
    assert kinds == ["memory"] * 3 + ["episode"] * 2 + ["profile"]
    memories = rows[:3]
    assert [m["id"] for m in memories] == sorted(m["id"] for m in memories)
    assert all(list(m) == MEMORY_KEYS for m in memories)
    assert all(CPERSONA_TIME.match(m["created_at"]) for m in memories)
    assert memories[0]["source"] == {"type": "User", "id": "ada", "name": "ada"}
    assert memories[0]["metadata"] == {"k": [1, "é"]}
    assert [m["locked"] for m in memories] == [1, 0, 0]
    assert list(rows[3]) == EPISODE_KEYS
    assert (rows[3]["start_time"], rows[4]["resolved"]) == ("2026-01-01T00:00:00Z", True)
    assert rows[5] == {
        "_type": "profile",
        "agent_id": "a",
        "user_id": "",
        "content": "a profile",
        "updated_at": rows[5]["updated_at"],
        "project_id": "",
    }
    everything = await client.call("export_memories", agent_id="", output_path="all.jsonl")
    assert (everything["memories"], everything["episodes"]) == (4, 2)


async def test_export_paths_are_confined_to_the_tenant_area(
    client: Agent, lib: Library, settings: Settings
) -> None:
    """Names with ``..``, absolute names and directory names are refused as in CPersona.
    Valid names are keys of the area's catalogue, not paths (files are stored under
    random names), so a symlink planted in the area redirects nothing: an export to
    ``escape/x.jsonl`` is stored inside the area and nothing appears outside it."""
    await seed(client)
    for bad in ("../x.jsonl", "a/../../x.jsonl", "/etc/passwd", "..", "", "."):
        body = await client.call("export_memories", agent_id="a", output_path=bad)
        assert body == {
            "ok": False,
            "error": f"output_path rejected (path traversal or outside export dir): {bad}",
        }
    tenant = next(row for row in await tenants.list_tenants(lib.db) if row.slug == "acme")
    area = files.tenant_area(settings, TenantId(tenant.id))
    outside = settings.data_dir / "outside"
    outside.mkdir()
    (area / "escape").symlink_to(outside)
    escaped = await client.call("export_memories", agent_id="a", output_path="escape/x.jsonl")
    assert escaped["ok"] is True
    assert not list(outside.iterdir())
    nested = await client.call("export_memories", agent_id="a", output_path="d/e/f.jsonl")
    assert nested["ok"] is True
    stored = sorted(p.name for p in area.iterdir() if p.is_file() and not p.is_symlink())
    assert len(stored) == 2
    assert all(re.fullmatch(r"f[0-9a-f]{32}\.jsonl", n) for n in stored)
    again = await client.call("import_memories", input_path="d/e/f.jsonl", target_agent_id="b")
    assert again["imported_memories"] == 3
    read = await client.call("import_memories", input_path="escape/../../outside")
    assert read == {
        "ok": False,
        "error": "input_path rejected (path traversal or outside export dir): escape/../../outside",
    }


async def test_reimport_into_a_fresh_agent_is_idempotent(client: Agent) -> None:
    await seed(client)
    await client.call("export_memories", agent_id="a", output_path="a.jsonl")
    first = await client.call("import_memories", input_path="a.jsonl", target_agent_id="fresh")
    assert first == {
        "ok": True,
        "dry_run": False,
        "imported_memories": 3,
        "skipped_memories": 0,
        "imported_episodes": 2,
        "skipped_episodes": 0,
        "profile_updated": True,
    }
    again = await client.call("import_memories", input_path="a.jsonl", target_agent_id="fresh")
    assert again == {
        "ok": True,
        "dry_run": False,
        "imported_memories": 0,
        "skipped_memories": 3,
        "imported_episodes": 0,
        "skipped_episodes": 2,
        "profile_updated": True,
    }
    listed = await client.call("list_memories", agent_id="fresh")
    assert listed["count"] == 3


async def test_a_header_declaring_more_records_rolls_everything_back(
    client: Agent, served: Served
) -> None:
    header = {
        "_type": "header",
        "version": "cpersona-export/1.0",
        "memory_count": 3,
        "episode_count": 0,
        "profile_count": 0,
    }
    memories = [{"_type": "memory", "agent_id": "t", "content": f"fact {i}"} for i in range(2)]
    profile = {"_type": "profile", "agent_id": "t", "content": "kept?"}
    await upload(served, client.key, "cut.jsonl", jsonl(header, *memories, profile))
    for dry_run in (False, True):
        body = await client.call("import_memories", input_path="cut.jsonl", dry_run=dry_run)
        assert body["ok"] is False
        assert body["error"].startswith(
            "import aborted and rolled back: file truncated or inconsistent"
        )
        assert "header declares 3 memories / 0 episodes / 0 profiles" in body["error"]
        assert "file contains 2 / 0 / 1" in body["error"]
        assert (body["imported_memories"], body["profile_updated"]) == (0, False)
        assert body["dry_run"] is dry_run
    assert (await client.call("list_memories", agent_id="t"))["count"] == 0
    assert await client.call("get_profile", agent_id="t") == {"profile": ""}


async def test_dry_run_reports_the_real_counts_including_in_file_duplicates(
    client: Agent, served: Served
) -> None:
    await client.call("store", agent_id="d", message={"id": "known", "content": "stored"})
    records = [
        {"_type": "memory", "agent_id": "d", "msg_id": "known", "content": "new text"},
        {"_type": "memory", "agent_id": "d", "content": "stored"},
        {"_type": "memory", "agent_id": "d", "content": "twice"},
        {"_type": "memory", "agent_id": "d", "content": "twice"},
        {"_type": "memory", "agent_id": "d", "msg_id": "x", "content": "one"},
        {"_type": "memory", "agent_id": "d", "msg_id": "x", "content": "two"},
        {"_type": "memory", "agent_id": "d", "content": "twice", "channel": "other"},
        {"_type": "episode", "agent_id": "d", "summary": "ep"},
        {"_type": "episode", "agent_id": "d", "summary": "ep"},
        {"_type": "episode", "agent_id": "d", "summary": "ep", "project_id": "p"},
    ]
    await upload(served, client.key, "dups.jsonl", jsonl(*records))
    before = await client.call("list_memories", agent_id="d")
    dry = await client.call("import_memories", input_path="dups.jsonl", dry_run=True)
    assert await client.call("list_memories", agent_id="d") == before
    assert (await client.call("list_episodes", agent_id="d"))["count"] == 0
    real = await client.call("import_memories", input_path="dups.jsonl")
    assert {**dry, "dry_run": False} == real
    assert (real["imported_memories"], real["skipped_memories"]) == (3, 4)
    assert (real["imported_episodes"], real["skipped_episodes"]) == (2, 1)


async def test_records_are_cleaned_like_store_and_problems_are_listed(
    client: Agent, served: Served
) -> None:
    records: list[dict[str, Any]] = [
        {
            "_type": "header",
            "version": "cpersona-export/1.1",
            "memory_count": 5,
            "entity_count": 1,
            "relation_count": 2,
        },
        {"_type": "memory", "agent_id": "c", "content": "[Memory from x] kept  " + "k" * 20_000},
        {"_type": "memory", "agent_id": "c", "content": "[Memory from x]   "},
        {"_type": "memory", "content": "no agent"},
        {"_type": "memory", "agent_id": "c", "content": "bad vector", "embedding_b64": "AAAAAAA="},
        {"_type": "memory", "agent_id": "c", "content": "big", "metadata": {"x": "m" * 9000}},
        {"_type": "entity", "name": "e"},
        {"_type": "relation"},
        {"_type": "relation"},
        {"_type": "mystery"},
        {"_type": "profile", "agent_id": "c", "content": "   "},
    ]
    deep = b'{"a":' * 5000 + b"1" + b"}" * 5000
    body = jsonl(*records) + b"{not json\n" + b'{"_type": "memory", "x": NaN}\n' + deep + b"\n"
    body += b'{"_type": ["memory"]}\n[1, 2]\n\xff\xfe\n'
    await upload(served, client.key, "messy.jsonl", body)
    result = await client.call("import_memories", input_path="messy.jsonl")
    assert {k: v for k, v in result.items() if k != "errors"} == {
        "ok": True,
        "dry_run": False,
        "imported_memories": 2,
        "skipped_memories": 2,
        "imported_episodes": 0,
        "skipped_episodes": 0,
        "profile_updated": False,
        "skipped_graph_records": {"entity": 1, "mention": 0, "relation": 2},
    }
    errors = "\n".join(result["errors"])
    assert "Line 2: memory content exceeded the 16000-character cap and was truncated" in errors
    assert "Line 3: memory content is empty after sanitisation" in errors
    assert "Line 4: memory missing agent_id" in errors
    assert "Line 5: embedding is 5 bytes" in errors
    assert "Line 6: metadata too large" in errors
    assert "Line 10: unknown type 'mystery'" in errors
    assert "Line 11: profile is empty after sanitisation; the existing profile was kept" in errors
    assert "Line 12: invalid JSON" in errors
    assert "Line 13: invalid JSON" in errors
    assert "Line 14: invalid JSON: nested too deeply" in errors
    assert "Line 15: record has no _type" in errors
    assert "Line 16: not a JSON object" in errors
    assert "Line 17: not valid UTF-8" in errors


async def test_graph_records_of_format_1_1_are_counted_and_skipped(
    client: Agent, served: Served
) -> None:
    records: list[dict[str, Any]] = [
        {
            "_type": "header",
            "version": "cpersona-export/1.1",
            "memory_count": 1,
            "episode_count": 0,
            "profile_count": 0,
            "entity_count": 1,
            "mention_count": 0,
            "relation_count": 2,
        },
        {
            "_type": "memory",
            "agent_id": "g",
            "content": "fact",
            "created_at": "2025-05-06 07:08:09",
            "locked": 1,
            "recall_count": 4,
        },
        {"_type": "entity", "name": "e"},
        {"_type": "relation"},
        {"_type": "relation"},
    ]
    await upload(served, client.key, "graph.jsonl", jsonl(*records))
    result = await client.call("import_memories", input_path="graph.jsonl")
    assert result == {
        "ok": True,
        "dry_run": False,
        "imported_memories": 1,
        "skipped_memories": 0,
        "imported_episodes": 0,
        "skipped_episodes": 0,
        "profile_updated": False,
        "skipped_graph_records": {"entity": 1, "mention": 0, "relation": 2},
    }
    row = (await client.call("list_memories", agent_id="g"))["memories"][0]
    assert (row["created_at"], row["locked"]) == ("2025-05-06T07:08:09+00:00", True)
    records[0]["relation_count"] = 3
    await upload(served, client.key, "graph.jsonl", jsonl(*records))
    mismatch = await client.call("import_memories", input_path="graph.jsonl")
    assert mismatch["ok"] is False
    assert "relation records: header 3, file 2" in mismatch["error"]


async def test_profiles_are_upserted_keeping_the_files_updated_at(
    client: Agent, served: Served, lib: Library
) -> None:
    await client.call("update_profile", agent_id="p", profile="old")
    profile = {
        "_type": "profile",
        "agent_id": "p",
        "user_id": "",
        "content": "new",
        "updated_at": "2024-02-03 04:05:06",
        "project_id": "",
    }
    await upload(served, client.key, "profile.jsonl", jsonl(profile))
    for _ in range(2):
        result = await client.call("import_memories", input_path="profile.jsonl")
        assert result["profile_updated"] is True
    assert await client.call("get_profile", agent_id="p") == {"profile": "new"}
    async with lib.db.admin_tx() as conn:
        stamp = await conn.fetchval("SELECT updated_at::text FROM profiles")
    assert stamp == "2024-02-03 04:05:06+00"


async def test_import_refuses_missing_unrecorded_and_oversized_files(
    lib: Library, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    """Only files the area's catalogue records can be imported: anything put into the
    area's directory by other means (a folder, a file) is "not found", like a name that
    was never written; an export larger than CPERSONA_MAX_IMPORT_BYTES is refused."""
    capped = dataclasses.replace(settings, max_import_bytes=1024)
    async with serve(capped, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "files"))
        missing = await agent.call("import_memories", input_path="nope.jsonl")
        assert missing == {"ok": False, "error": "File not found: nope.jsonl"}
        tenant = next(row for row in await tenants.list_tenants(lib.db) if row.slug == "files")
        area = files.tenant_area(capped, TenantId(tenant.id))
        (area / "folder").mkdir()
        folder = await agent.call("import_memories", input_path="folder")
        assert folder == {"ok": False, "error": "File not found: folder"}
        (area / "planted.jsonl").write_bytes(b'{"_type": "memory", "agent_id": "x"}\n')
        planted = await agent.call("import_memories", input_path="planted.jsonl")
        assert planted == {"ok": False, "error": "File not found: planted.jsonl"}
        for n in range(12):
            await agent.call("store", agent_id="a", message={"content": f"fact number {n}"})
        exported = await agent.call("export_memories", agent_id="a", output_path="big.jsonl")
        assert exported["ok"] is True
        big = await agent.call("import_memories", input_path="big.jsonl")
        assert big == {
            "ok": False,
            "error": "input file exceeds MAX_IMPORT_BYTES (1024): big.jsonl",
        }


async def test_one_tenant_never_reaches_another_tenants_files(
    lib: Library, served: Served, settings: Settings
) -> None:
    a = Agent(served, await new_tenant(lib, "tenant-a"))
    b = Agent(served, await new_tenant(lib, "tenant-b"))
    await a.call("store", agent_id="x", message={"content": "A's secret"})
    exported = await a.call("export_memories", agent_id="x", output_path="secret.jsonl")
    assert (await download(served, a.key, exported["download_url"])).status_code == 200
    stolen = await download(served, b.key, exported["download_url"])
    assert (stolen.status_code, stolen.json()) == (404, {"error": "not found"})
    read = await b.call("import_memories", input_path="secret.jsonl")
    assert read == {"ok": False, "error": "File not found: secret.jsonl"}
    await b.call("export_memories", agent_id="x", output_path="secret.jsonl")
    kept = await download(served, a.key, exported["download_url"])
    assert kept.content.count(b"\n") == 2
    assert b"A's secret" in kept.content
    ids = {row.slug: row.id for row in await tenants.list_tenants(lib.db)}
    area_a = files.tenant_area(settings, TenantId(ids["tenant-a"]))
    area_b = files.tenant_area(settings, TenantId(ids["tenant-b"]))
    assert any("A's secret" in p.read_text() for p in area_a.iterdir())
    assert not any("A's secret" in p.read_text() for p in area_b.iterdir())


async def test_under_a_pause_real_imports_and_merges_are_skipped_but_dry_runs_report(
    client: Agent, served: Served
) -> None:
    await upload(
        served,
        client.key,
        "p.jsonl",
        jsonl({"_type": "memory", "agent_id": "q", "content": "paused fact"}),
    )
    await client.call("store", agent_id="src", message={"content": "to merge"})
    await client.call("pause_persistence", ttl_seconds=60)
    dry = await client.call("import_memories", input_path="p.jsonl", dry_run=True)
    assert (dry["imported_memories"], dry["dry_run"]) == (1, True)  # acceptance 76
    skipped = await client.call("import_memories", input_path="p.jsonl")
    assert skipped["persisted"] is False
    assert (skipped["imported_memories"], skipped["dry_run"]) == (0, True)
    assert "`import_memories` skipped" in skipped["reason"]
    merged = await client.call("merge_memories", source_agent_id="src", target_agent_id="dst")
    assert (merged["persisted"], merged["merged_memories"]) == (False, 0)
    preview = await client.call(
        "merge_memories", source_agent_id="src", target_agent_id="dst", dry_run=True
    )
    assert preview["merged_memories"] == 1
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        body = jsonl({"_type": "memory", "agent_id": "q", "content": "over http"})
        response = await http.post(
            "/v1/import", content=body, headers={"authorization": f"Bearer {client.key}"}
        )
    assert (response.status_code, response.json()["persisted"]) == (200, False)
    await client.call("resume_persistence")
    assert (await client.call("list_memories", agent_id="q"))["count"] == 0
    assert (await client.call("list_memories", agent_id="dst"))["count"] == 0
