"""The hand-off to the write-behind: closed until a write-behind runs, bounded, oldest first."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from service.memory.queue.handoff import Handoff
from service.models import TenantId

TENANT = TenantId(uuid.UUID(int=1))


def test_a_closed_hand_off_leaves_every_row_to_the_queue_worker() -> None:
    handoff = Handoff()
    assert handoff.offer(TENANT, "mem", 1) is False
    assert len(handoff) == 0


async def test_rows_are_taken_oldest_first_and_once_each() -> None:
    handoff = Handoff()
    handoff.start()
    for item in (3, 1, 2, 1):
        handoff.offer(TENANT, "mem", item)
    await asyncio.wait_for(handoff.wait(), 1)
    assert handoff.take(2) == [(TENANT, "mem", 3), (TENANT, "mem", 1)]
    assert handoff.take(5) == [(TENANT, "mem", 2)]
    assert handoff.take(5) == []


async def test_a_full_hand_off_refuses_and_stop_returns_what_was_not_taken() -> None:
    handoff = Handoff(limit=2)
    handoff.start()
    assert [handoff.offer(TENANT, "ep", n) for n in range(3)] == [True, True, False]
    assert handoff.stop() == [(TENANT, "ep", 0), (TENANT, "ep", 1)]
    assert handoff.offer(TENANT, "ep", 9) is False
    with pytest.raises(RuntimeError, match="not open"):
        await handoff.wait()
