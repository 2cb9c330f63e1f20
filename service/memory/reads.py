"""Read-only operations on the read replica, with the primary as the fallback.

A read-only tool call (``ToolSpec.read_only``) runs through :func:`on_replica`: on the
replica when one is configured and keeps up (:class:`service.db.read_routing.ReadReplica`
decides), else on the primary. When the replica fails during the call (it stopped, its
connection broke, a recovery conflict cancelled the query) the call runs again on the
primary: read-only work can be repeated, so the client sees an answer, not an error. A
read that turns out to write (the replica refuses with "read-only transaction") is
also rerun on the primary and logged, so a routing mistake degrades to the primary
instead of failing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from service.memory.library import Library

T = TypeVar("T")


async def on_replica(lib: Library, work: Callable[[Library], Awaitable[T]]) -> T:
    """``work`` on a read-replica view of ``lib`` when the replica is usable, else (or
    when the replica fails during it) on ``lib`` itself."""
    replica = lib.replica
    if replica is None:
        return await work(lib)
    return await replica.run(lambda db: work(lib if db is None else lib.reading_from(db)))
