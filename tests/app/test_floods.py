"""Issue 36 (9): floods. Failed credentials are throttled per address before the database
is asked, and one tenant holds at most its share of each lane, so another tenant keeps
capacity. The latencies are measured by ``bench/floods.py`` (speed lives in bench/);
these tests pin the mechanisms.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

import httpx
import pytest

from service.app.admission import Lane, Refusal
from service.app.credentials import CredentialGate
from service.app.oauth.bearer import INVALID
from service.config import Settings
from service.memory.library import Library
from service.models import Caller, TenantId
from tests.support import new_tenant, serve

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
HEADERS = {"accept": "application/json, text/event-stream"}


async def _hold(lane: Lane, owner: str, entered: asyncio.Event, release: asyncio.Event) -> None:
    async with lane.slot(owner):
        entered.set()
        await release.wait()


async def test_a_tenant_at_its_share_queues_behind_itself_while_another_runs_at_once() -> None:
    lane = Lane("read", capacity=4, queue=8, wait=5.0, share=0.5)
    assert (lane.per_owner, lane.per_owner_queue) == (2, 4)
    release = asyncio.Event()
    flood = [asyncio.Event() for _ in range(3)]
    tasks = [asyncio.create_task(_hold(lane, "a", event, release)) for event in flood]
    await asyncio.wait_for(asyncio.gather(flood[0].wait(), flood[1].wait()), 1)
    await asyncio.sleep(0)
    assert (lane.running("a"), lane.waiting, flood[2].is_set()) == (2, 1, False)
    other = asyncio.Event()  # the lane has room: tenant b runs at once, past a's waiter
    tasks.append(asyncio.create_task(_hold(lane, "b", other, release)))
    await asyncio.wait_for(other.wait(), 1)
    assert (lane.active, lane.running("b")) == (3, 1)
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 1)
    assert flood[2].is_set()
    assert (lane.active, lane.waiting) == (0, 0)


async def test_a_freed_place_goes_to_the_tenant_under_its_share_first() -> None:
    lane = Lane("write", capacity=2, queue=8, wait=5.0, share=0.5)
    releases = [asyncio.Event(), asyncio.Event()]
    entered = [asyncio.Event(), asyncio.Event()]
    holders = [  # a holds one place, b holds the other: the lane is full
        asyncio.create_task(_hold(lane, owner, entered[n], releases[n]))
        for n, owner in enumerate("ab")
    ]
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in entered)), 1)
    a_waits, c_waits = asyncio.Event(), asyncio.Event()
    done = asyncio.Event()
    waiters = [asyncio.create_task(_hold(lane, "a", a_waits, done))]
    await asyncio.sleep(0)
    waiters.append(asyncio.create_task(_hold(lane, "c", c_waits, done)))
    await asyncio.sleep(0)
    releases[1].set()  # b leaves; a (first in line) is at its share, so c gets the place
    await asyncio.wait_for(c_waits.wait(), 1)
    assert not a_waits.is_set()
    releases[0].set()
    await asyncio.wait_for(a_waits.wait(), 1)
    done.set()
    await asyncio.wait_for(asyncio.gather(*holders, *waiters), 1)
    assert (lane.active, lane.waiting) == (0, 0)


async def test_a_tenant_over_its_queue_share_is_refused_with_429() -> None:
    lane = Lane("bulk", capacity=1, queue=4, wait=5.0, share=0.5)
    release = asyncio.Event()
    tasks = [asyncio.create_task(_hold(lane, "a", asyncio.Event(), release)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert (lane.active, lane.waiting) == (1, 2)
    with pytest.raises(Refusal) as refused:
        async with lane.slot("a"):
            pass
    assert (refused.value.status, refused.value.reason) == (429, "tenant_concurrency")
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 1)


def _caller() -> Caller:
    return Caller(TenantId(uuid.uuid4()), "t", "cpk_x", "l", {"*": "read-write"})


def test_a_refused_credential_is_answered_from_memory_and_counts_against_its_address() -> None:
    gate = CredentialGate(
        dataclasses.replace(Settings(), auth_failure_burst=3.0, auth_failure_rate=0.01)
    )
    bogus = "cpk_bogus_key"
    assert gate.before("10.0.0.1", bogus) is None  # first time: looked up
    gate.after("10.0.0.1", bogus, INVALID)
    for _ in range(3):  # a repeat: no lookup, from any address
        assert gate.before("10.0.0.2", bogus) is INVALID
    assert gate.lookups_saved == 3
    with pytest.raises(Refusal) as refused:  # 10.0.0.2's burst of 3 is spent
        gate.before("10.0.0.2", bogus)
    assert (refused.value.status, refused.value.reason) == (429, "auth_failures")
    with pytest.raises(Refusal):  # a new credential from it is refused before any lookup
        gate.before("10.0.0.2", "cpk_another_guess")
    assert gate.before("10.0.0.3", "cpk_another_guess") is None  # other addresses are free


def test_a_credential_accepted_before_passes_a_throttled_address() -> None:
    gate = CredentialGate(
        dataclasses.replace(Settings(), auth_failure_burst=1.0, auth_failure_rate=0.01)
    )
    gate.after("10.0.0.1", "cpk_good", _caller())
    gate.after("10.0.0.1", "cpk_bad", INVALID)  # the address's one failure
    with pytest.raises(Refusal):
        gate.before("10.0.0.1", "cpk_unknown")
    assert gate.before("10.0.0.1", "cpk_good") is None  # still looked up (revocation holds)


async def test_a_flood_of_bogus_keys_from_one_address_gets_429_and_good_keys_still_work(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "acme")
    flooded = dataclasses.replace(settings, auth_failure_burst=5.0, auth_failure_rate=0.01)
    async with serve(flooded, database_url) as served, httpx.AsyncClient() as http:

        async def ping(credential: str) -> httpx.Response:
            auth = {**HEADERS, "authorization": f"Bearer {credential}"}
            return await http.post(served.mcp_url, json=PING, headers=auth)

        assert (await ping(key)).status_code == 200
        statuses = [(await ping(f"cpk_guess_{n:04d}_" + "x" * 30)).status_code for n in range(8)]
        assert statuses == [401] * 5 + [429] * 3
        refused = await ping("cpk_one_more_guess_" + "x" * 30)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"]["data"]["reason"] == "auth_failures"
        assert (await ping(key)).status_code == 200  # the key this address used before
        bare = await http.post(served.mcp_url, json=PING, headers=HEADERS)
        assert bare.status_code == 401  # no credential is no failure
