"""Waiting for something another process does, always with a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]],
    accept: Callable[[T], bool],
    *,
    within: float,
    what: str,
    interval: float = 0.05,
) -> T:
    """Call ``probe`` until ``accept`` takes its value; fail the test after ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if accept(value):
            return value
        assert time.monotonic() < deadline, f"{what}: not within {within:g} s (last: {value!r})"
        await asyncio.sleep(interval)
