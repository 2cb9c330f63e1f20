"""kill -9 of the embedded postmaster under 8 writers: nothing lost, nothing doubled, healed.

Eight MCP clients store distinct messages (each with its own ``msg_id``) through the
real ``serve``; the postmaster is killed mid-run. A client retries a message until it
is acknowledged (``stored``, or ``skipped`` as a duplicate of its own committed but
unanswered attempt), exactly as a client honouring ``Retry-After`` does. Afterwards
every acknowledged message is in the database exactly once, and the service
answered again with no manual step; while it was down every answer was a 503 with
``Retry-After`` and a JSON-RPC error, and the log stayed a few lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.fault.service import Running, call, running_service

WRITERS = 8
WARM_SECONDS = 1.5
WARM_LIMIT_SECONDS = 60.0  # a loaded machine: the first stores load the model
AFTER_HEAL_SECONDS = 1.5
HEAL_LIMIT_SECONDS = 30.0


@dataclasses.dataclass
class Tally:
    acknowledged: set[str] = dataclasses.field(default_factory=set)
    refusals: list[tuple[int, str | None, int | None]] = dataclasses.field(default_factory=list)
    unexpected: list[str] = dataclasses.field(default_factory=list)
    first_refused: float | None = None  # when the first 503 came back
    acks: list[tuple[float, float]] = dataclasses.field(default_factory=list)  # (sent, answered)
    healed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    warm: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)  # WRITERS acks

    def acknowledge(self, msg_id: str) -> None:
        self.acknowledged.add(msg_id)
        if len(self.acknowledged) >= WRITERS:
            self.warm.set()

    def healed_at(self) -> float | None:
        """When the first write sent after the outage was noticed was acknowledged."""
        if self.first_refused is None:
            return None
        after = [answered for sent, answered in self.acks if sent > self.first_refused]
        return min(after, default=None)


def _acknowledged(response: httpx.Response) -> bool:
    if response.status_code != 200:
        return False
    result = response.json()["result"]
    text = result["content"][0]["text"]
    return result["isError"] is False and ('"stored"' in text or "duplicate msg_id" in text)


def _note_refusal(tally: Tally, response: httpx.Response) -> float:
    """Record a 503 (how a healing service must answer) and return its Retry-After."""
    retry = response.headers.get("retry-after")
    code = None
    if response.headers.get("content-type", "").startswith("application/json"):
        code = response.json().get("error", {}).get("code")
    tally.refusals.append((response.status_code, retry, code))
    return float(retry or 1)


async def _store_until_acknowledged(
    http: httpx.AsyncClient, running: Running, message: dict[str, str], tally: Tally
) -> None:
    """Send one message until it is acknowledged, honouring Retry-After (capped)."""
    while True:
        sent = time.monotonic()
        try:
            response = await call(
                http, running, running.key, "store", agent_id="crash", message=message
            )
        except httpx.HTTPError as exc:
            tally.unexpected.append(repr(exc))
            await asyncio.sleep(0.1)
            continue
        if _acknowledged(response):
            tally.acks.append((sent, time.monotonic()))
            if tally.first_refused is not None and sent > tally.first_refused:
                tally.healed.set()
            return
        if response.status_code == 503:
            if tally.first_refused is None:
                tally.first_refused = time.monotonic()
            await asyncio.sleep(min(_note_refusal(tally, response), 0.2))
            continue
        tally.unexpected.append(f"{response.status_code} {response.text[:300]}")
        await asyncio.sleep(0.1)


async def _writer(running: Running, number: int, stop: asyncio.Event, tally: Tally) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        sequence = 0
        while not stop.is_set():
            msg_id = f"w{number}-{sequence}"
            message = {"id": msg_id, "content": f"writer {number} message {sequence}"}
            await _store_until_acknowledged(http, running, message, tally)
            tally.acknowledge(msg_id)
            sequence += 1


async def _stored_msg_ids(running: Running) -> list[str]:
    async with running.database() as db, db.admin_conn() as conn:
        rows = await conn.fetch("SELECT msg_id FROM memories WHERE msg_id LIKE 'w%'")
    return [row["msg_id"] for row in rows]


async def _warmed_up(tally: Tally) -> None:
    """At least WARM_SECONDS of writing and as many acknowledgements as writers, so the kill
    lands on a service under load (bounded: WARM_LIMIT_SECONDS)."""
    await asyncio.sleep(WARM_SECONDS)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(tally.warm.wait(), WARM_LIMIT_SECONDS)


@pytest.mark.parametrize("workers", [1, 2])
async def test_kill_9_of_postgres_under_8_writers_loses_nothing_and_heals_within_30_s(
    tmp_path: Path, record_property: Callable[[str, object], None], workers: int
) -> None:
    """Also with ``serve --workers 2``: both workers share the embedded Postgres, which
    one supervisor restarts, and a writer's requests may land on either worker."""
    with running_service(tmp_path, args=("--workers", str(workers))) as running:
        stop, tally = asyncio.Event(), Tally()
        writers = [asyncio.create_task(_writer(running, n, stop, tally)) for n in range(WRITERS)]
        await _warmed_up(tally)
        before = len(tally.acknowledged)
        os.kill(running.postmaster_pid(), signal.SIGKILL)
        killed = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(tally.healed.wait(), HEAL_LIMIT_SECONDS)
        healed_after = (tally.healed_at() or float("inf")) - killed
        await asyncio.sleep(AFTER_HEAL_SECONDS)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*writers), 30)
        stored = await _stored_msg_ids(running)
        log = running.log_lines()
    record_property("time_to_heal_seconds", round(healed_after, 2))
    assert healed_after <= HEAL_LIMIT_SECONDS
    assert before > 0
    assert len(tally.acknowledged) > before
    assert tally.unexpected == []
    assert sorted(stored) == sorted(tally.acknowledged)  # none lost, none doubled
    assert all(status == 503 and retry and code == -32003 for status, retry, code in tally.refusals)
    assert not [line for line in log if line.get("level") == "error" or "exception" in line]
    unavailable = [line for line in log if line.get("event") == "database_unavailable"]
    assert 1 <= len(unavailable) <= 3
    restarted = [line for line in log if line.get("event") == "embedded_postgres_restarted"]
    assert len(restarted) == 1, restarted
    started = [line for line in log if line.get("event") == "workers_started"]
    assert [len(line["pids"]) for line in started] == ([workers] if workers > 1 else [])
