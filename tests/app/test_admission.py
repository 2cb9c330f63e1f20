"""Lanes and per-key limits: bounded work, bounded queues, bounded waits, in order."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from service.app.admission import KeyLimits, Lane, Refusal, lane_of_tools
from service.config import Settings


async def _hold(lane: Lane, entered: asyncio.Event, release: asyncio.Event) -> None:
    async with lane.slot():
        entered.set()
        await release.wait()


async def test_a_lane_runs_its_capacity_queues_a_bounded_number_and_refuses_the_rest() -> None:
    lane = Lane("read", capacity=2, queue=1, wait=5.0)
    release = asyncio.Event()
    running = [asyncio.Event() for _ in range(3)]
    tasks = [asyncio.create_task(_hold(lane, event, release)) for event in running]
    await asyncio.wait_for(asyncio.gather(running[0].wait(), running[1].wait()), 1)
    await asyncio.sleep(0)  # the third is queued, not running
    assert (lane.active, lane.waiting, running[2].is_set()) == (2, 1, False)
    with pytest.raises(Refusal) as refused:
        async with lane.slot():
            pass
    assert (refused.value.status, refused.value.reason) == (503, "overloaded")
    assert refused.value.retry_after_header == "1"
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 1)
    assert running[2].is_set()
    assert (lane.active, lane.waiting) == (0, 0)


async def test_a_queued_request_is_refused_after_the_queue_wait() -> None:
    lane = Lane("write", capacity=1, queue=5, wait=0.2)
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(lane, asyncio.Event(), release))
    await asyncio.sleep(0)
    started = time.monotonic()
    with pytest.raises(Refusal, match=r"had no room within 0\.2 s"):
        async with lane.slot():
            pass
    assert 0.15 < time.monotonic() - started < 1.0
    release.set()
    await holder
    assert (lane.active, lane.waiting) == (0, 0)


async def test_a_waiter_that_goes_away_neither_keeps_nor_leaks_a_place() -> None:
    lane = Lane("bulk", capacity=1, queue=5, wait=5.0)
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(lane, asyncio.Event(), release))
    await asyncio.sleep(0)
    gone = asyncio.create_task(_hold(lane, asyncio.Event(), asyncio.Event()))
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    entered = asyncio.Event()
    later = asyncio.create_task(_hold(lane, entered, release))
    release.set()
    await asyncio.wait_for(asyncio.gather(holder, later), 1)
    assert entered.is_set()
    assert (lane.active, lane.waiting) == (0, 0)


def _limits(**changes: object) -> KeyLimits:
    return KeyLimits(dataclasses.replace(Settings(), **changes))  # type: ignore[arg-type]


def test_the_rate_limit_allows_the_burst_then_refuses_with_the_time_to_the_next_token() -> None:
    limits = _limits(rate_limit_per_key=2.0, rate_limit_burst=3.0)
    for _ in range(3):
        with limits.hold("cpk_a"):
            pass
    with pytest.raises(Refusal) as refused, limits.hold("cpk_a"):
        pass
    assert (refused.value.status, refused.value.reason) == (429, "rate_limited")
    assert 0.0 < refused.value.retry_after <= 0.5
    with limits.hold("cpk_b"):  # another key has its own bucket
        pass


def test_each_replica_enforces_its_share_of_the_rate_limit() -> None:
    limits = _limits(rate_limit_per_key=10.0, rate_limit_burst=4.0, replicas=4)
    with limits.hold("cpk_a"):
        pass
    with pytest.raises(Refusal), limits.hold("cpk_a"):  # burst 4 / 4 replicas = 1
        pass


def test_a_key_over_its_concurrency_cap_is_refused_until_one_finishes() -> None:
    limits = _limits(max_concurrent_per_key=2)
    with limits.hold("cpk_a"), limits.hold("cpk_a"):
        with pytest.raises(Refusal) as refused, limits.hold("cpk_a"):
            pass
        assert refused.value.reason == "key_concurrency"
        with limits.hold("cpk_b"):
            pass
    with limits.hold("cpk_a"):
        pass


def test_no_limits_by_default_but_the_concurrency_cap() -> None:
    limits = _limits()
    for _ in range(1000):
        with limits.hold("cpk_a"):
            pass


def test_mcp_requests_are_laned_by_whether_the_tool_only_reads() -> None:
    lane_of = lane_of_tools(frozenset({"recall"}))
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s"}}'
    assert lane_of(call % b"recall") == "read"
    assert lane_of(call % b"store") == "write"
    assert lane_of(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}') == "read"
    assert lane_of(b"not json") == "read"
    assert lane_of(b"[1, 2]") == "read"


def test_a_tools_call_whose_name_is_not_a_string_goes_to_the_read_lane() -> None:
    lane_of = lane_of_tools(frozenset({"recall"}))
    for name in (b'["recall"]', b'{"a": 1}', b"5", b"null"):
        call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%s}}' % name
        assert lane_of(call) == "read"
