"""The streaming endpoints: GET /v1/export, POST /v1/import, /v1/files (real HTTP)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.memory.portability import signing
from service.models import TenantId
from tests.support import Agent, Served, new_tenant, serve

RECORDS = [
    {
        "_type": "header",
        "version": "cpersona-export/1.0",
        "agent_id": "",
        "memory_count": 2,
        "episode_count": 1,
        "has_profile": True,
        "profile_count": 1,
    },
    {"_type": "memory", "agent_id": "h", "msg_id": "m1", "content": "first"},
    {"_type": "memory", "agent_id": "h", "content": "second"},
    {"_type": "episode", "agent_id": "h", "summary": "an episode"},
    {"_type": "profile", "agent_id": "h", "content": "a profile"},
]
BODY = b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        log_format="console",
        db_pool_min=1,
        db_pool_max=4,
        data_dir=tmp_path / "data",
        embedding_mode="none",
        max_import_bytes=64 * 1024,
    )


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def test_import_then_export_stream_round_trip(client: Agent, served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        dry = await http.post("/v1/import?dry_run=true", content=BODY, headers=auth(client.key))
        assert dry.status_code == 200
        assert (await client.call("list_memories", agent_id="h"))["count"] == 0
        done = await http.post("/v1/import", content=BODY, headers=auth(client.key))
        assert done.json() == {**dry.json(), "dry_run": False}
        assert done.json()["imported_memories"] == 2
        exported = await http.get("/v1/export?agent_id=h", headers=auth(client.key))
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    assert exported.headers["x-request-id"]
    lines = [json.loads(line) for line in exported.content.splitlines()]
    assert [line["_type"] for line in lines] == ["header", "memory", "memory", "episode", "profile"]
    assert [line.get("content") for line in lines[1:3]] == ["first", "second"]
    assert lines[0]["memory_count"] == 2


async def test_streamed_import_body_is_read_in_pieces(client: Agent, served: Served) -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(BODY), 7):  # lines cut at arbitrary points
            yield BODY[start : start + 7]

    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        response = await http.post(
            "/v1/import?target_agent_id=pieces", content=pieces(), headers=auth(client.key)
        )
    assert response.status_code == 200, response.text
    assert response.json()["imported_memories"] == 2
    assert (await client.call("list_memories", agent_id="pieces"))["count"] == 2


async def test_oversized_bodies_get_413_and_nothing_is_written(
    client: Agent, served: Served
) -> None:
    big = BODY + b"\n" * (70 * 1024)

    async def chunked() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 4096):
            yield big[start : start + 4096]

    many = b"".join(
        b'{"_type": "memory", "agent_id": "h", "content": "row %d"}\n' % i for i in range(1500)
    )

    async def batches_then_too_much() -> AsyncIterator[bytes]:
        for start in range(0, len(many), 4096):  # a 500-row batch is written before the cut
            yield many[start : start + 4096]

    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        declared = await http.post("/v1/import", content=big, headers=auth(client.key))
        streamed = await http.post("/v1/import", content=chunked(), headers=auth(client.key))
        upload = await http.post("/v1/files/big.jsonl", content=chunked(), headers=auth(client.key))
        midway = await http.post(
            "/v1/import", content=batches_then_too_much(), headers=auth(client.key)
        )
    for response in (declared, streamed, upload, midway):
        assert response.status_code == 413
        assert response.json() == {"error": "request body too large (max 65536 bytes)"}
    assert (await client.call("list_memories", agent_id="h"))["count"] == 0
    missing = await client.call("import_memories", input_path="big.jsonl")
    assert missing == {"ok": False, "error": "File not found: big.jsonl"}


async def test_auth_grants_and_bad_parameters(lib: Library, served: Served) -> None:
    await new_tenant(lib, "perm")
    reader = await tenants.create_key(lib.db, "perm", grants={"*": "read"})
    writer = await tenants.create_key(lib.db, "perm", grants={"w": "read-write", "*": "read"})
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        routes = [
            ("GET", "/v1/export"),
            ("POST", "/v1/import"),
            ("POST", "/v1/files/x.jsonl"),
            ("GET", "/v1/files/token"),
        ]
        for method, path in routes:
            anonymous = await http.request(method, path)
            assert anonymous.status_code == 401
            assert anonymous.headers["www-authenticate"].startswith("Bearer resource_metadata=")
        rebound = await http.get("/v1/export", headers={**auth(writer), "host": "evil.example"})
        assert rebound.status_code == 421  # DNS-rebinding protection, as on /mcp
        denied = await http.get("/v1/export?agent_id=w", headers=auth(reader))
        assert denied.status_code == 403
        assert denied.json()["error"] == "permission_denied"
        sweep = await http.post("/v1/import", content=BODY, headers=auth(writer))
        assert (sweep.status_code, sweep.json()["agent_id"]) == (403, "*")
        allowed = await http.post(
            "/v1/import?target_agent_id=w", content=BODY, headers=auth(writer)
        )
        assert allowed.status_code == 200
        no_upload = await http.post("/v1/files/x.jsonl", content=BODY, headers=auth(reader))
        assert no_upload.status_code == 403
        bad_flag = await http.post("/v1/import?dry_run=maybe", content=BODY, headers=auth(writer))
        assert bad_flag.status_code == 400
        traversal = await http.post("/v1/files/..%2Fx.jsonl", content=BODY, headers=auth(writer))
        assert traversal.status_code in (400, 404)


async def test_inconsistent_upload_answers_422_and_rolls_back(
    client: Agent, served: Served
) -> None:
    cut = b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS[:-2])
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        response = await http.post("/v1/import", content=cut, headers=auth(client.key))
    assert response.status_code == 422
    assert response.json()["error"].startswith("import aborted and rolled back")
    assert (await client.call("list_memories", agent_id="h"))["count"] == 0


async def test_uploaded_files_import_with_the_tool_and_downloads_expire(
    client: Agent, served: Served, lib: Library, settings: Settings
) -> None:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        stored = await http.post("/v1/files/in/up.jsonl", content=BODY, headers=auth(client.key))
        assert stored.status_code == 201
        assert stored.json() == {"ok": True, "path": "in/up.jsonl", "bytes": len(BODY)}
        result = await client.call("import_memories", input_path="in/up.jsonl")
        assert result["imported_memories"] == 2
        exported = await client.call("export_memories", agent_id="h", output_path="out.jsonl")
        fine = await http.get(exported["download_url"], headers=auth(client.key))
        assert fine.status_code == 200
        assert fine.headers["content-disposition"] == 'attachment; filename="out.jsonl"'
        tampered = exported["download_url"][:-2] + "AA"
        assert (await http.get(tampered, headers=auth(client.key))).status_code == 404
        tenant = next(row for row in await tenants.list_tenants(lib.db) if row.slug == "acme")
        key = signing.signing_key(settings)
        storage = signing.verify(key, exported["download_url"].rsplit("/", 1)[1])
        assert storage is not None
        old, _ = signing.issue(
            key, TenantId(tenant.id), "out.jsonl", storage.storage, ttl=timedelta(seconds=-1)
        )
        expired = await http.get(f"/v1/files/{old}", headers=auth(client.key))
        assert expired.status_code == 410


async def test_public_url_and_signing_key_settings_shape_download_urls(
    lib: Library, settings: Settings, database_url: str
) -> None:
    custom = dataclasses.replace(
        settings, public_url="https://mem.example.com", signing_key="k" * 32
    )
    async with serve(custom, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "urls"))
        body = await agent.call("export_memories", agent_id="", output_path="x.jsonl")
        assert body["download_url"].startswith("https://mem.example.com/v1/files/")
        token = body["download_url"].rsplit("/", 1)[1]
        assert signing.verify(b"k" * 32, token) is not None
        assert signing.verify(b"other key" * 4, token) is None
    assert not (settings.data_dir / signing.KEY_FILE).exists()
