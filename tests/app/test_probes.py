"""The probes: Host/Origin checks on every one, readiness at or ahead of the head revision.

A DNS-rebinding page sends its own name as Host, so ``/metrics``, ``/readyz`` and
``/healthz`` refuse a foreign Host like ``/mcp`` does; a request without Host (a load
balancer's health check) or naming this machine by IP (a kubelet, Prometheus) is
not from a browser and passes. ``CPERSONA_METRICS_HOST_CHECK=false`` exempts
``/metrics`` only.
"""

from __future__ import annotations

import asyncio
import dataclasses

import httpx

from service.config import Settings
from service.db import migrate
from service.memory.library import Library
from tests.support import Served, serve

PROBES = ("/healthz", "/readyz", "/metrics")


async def _status(http: httpx.AsyncClient, served: Served, path: str, host: str) -> int:
    return (await http.get(f"{served.base_url}{path}", headers={"host": host})).status_code


async def _without_host(served: Served, path: str, origin: str | None = None) -> int:
    """An HTTP/1.0 request with no Host header, as HAProxy's default check sends."""
    port = int(served.base_url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    extra = f"Origin: {origin}\r\n" if origin else ""
    writer.write(f"GET {path} HTTP/1.0\r\n{extra}\r\n".encode())
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    await writer.wait_closed()
    return int(status_line.split()[1])


async def test_every_probe_refuses_a_foreign_host_and_accepts_loopback(
    settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served, httpx.AsyncClient() as http:
        for path in PROBES:
            assert await _status(http, served, path, "evil.example") == 421, path
            assert await _status(http, served, path, "127.0.0.1:8402") == 200, path
            assert await _status(http, served, path, "localhost") == 200, path
            assert await _without_host(served, path) == 200, path
            assert await _without_host(served, path, "http://evil.example") == 403, path
        foreign_origin = {"origin": "http://evil.example"}
        metrics = await http.get(f"{served.base_url}/metrics", headers=foreign_origin)
        assert metrics.status_code == 403


async def test_probes_accept_this_machines_own_address_behind_named_hosts(
    settings: Settings, database_url: str
) -> None:
    named = dataclasses.replace(settings, allowed_hosts=("mem.example.com",))
    async with serve(named, database_url) as served, httpx.AsyncClient() as http:
        assert await _status(http, served, "/readyz", "mem.example.com") == 200
        assert await _status(http, served, "/readyz", "127.0.0.1:8402") == 200
        assert await _status(http, served, "/readyz", "other.example.com") == 421
        assert await _status(http, served, "/metrics", "other.example.com") == 421


async def test_the_metrics_host_check_can_be_switched_off_for_metrics_only(
    settings: Settings, database_url: str
) -> None:
    exempt = dataclasses.replace(settings, metrics_host_check=False)
    async with serve(exempt, database_url) as served, httpx.AsyncClient() as http:
        assert await _status(http, served, "/metrics", "scraper.internal") == 200
        assert await _status(http, served, "/readyz", "scraper.internal") == 421
        assert await _status(http, served, "/healthz", "scraper.internal") == 421


async def _set_revision(lib: Library, revision: str) -> None:
    async with lib.db.admin_tx() as conn:
        await conn.execute("UPDATE alembic_version SET version_num = $1", revision)


async def test_readiness_accepts_a_database_ahead_of_the_code_and_refuses_one_behind(
    lib: Library, settings: Settings, database_url: str
) -> None:
    head = migrate.head_revision()
    async with serve(settings, database_url) as served, httpx.AsyncClient() as http:
        await _set_revision(lib, "9999_a_newer_release")
        ahead = await http.get(f"{served.base_url}/readyz")
        await _set_revision(lib, "0001")
        behind = await http.get(f"{served.base_url}/readyz")
        await _set_revision(lib, head)
    assert ahead.status_code == 200
    assert ahead.json() == {
        "status": "ready",
        "revision": "9999_a_newer_release",
        "head": head,
        "ahead": True,
    }
    assert behind.status_code == 503
    assert behind.json()["status"] == "migrations pending"


def test_revision_states() -> None:
    head = migrate.head_revision()
    assert migrate.revision_state(head) == "head"
    assert migrate.revision_state("0001") == "behind"
    assert migrate.revision_state(None) == "unmigrated"
    assert migrate.revision_state("9999_unknown") == "ahead"
    assert migrate.servable("9999_unknown")
    assert migrate.servable(head)
    assert not migrate.servable("0001")
