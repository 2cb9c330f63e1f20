"""The write side of an import: rows buffered into batches, each written while the
next one is parsed.

A batch goes out when it holds 500 rows of a kind or 8 MB of input, so memory
is bounded by the batch, not the file. Writing happens in a background task
so Postgres inserts one batch while Python parses the next (two cores work at
once). The transaction has one connection, which runs one statement at a
time: every other statement of the import first calls :meth:`settle`, and an
import that stops early calls :meth:`abandon` before its transaction ends.
"""

from __future__ import annotations

import asyncio
import dataclasses

from service.db import portability as portability_queries
from service.db.pool import Connection
from service.models import TenantId

BATCH_ROWS = 500
BATCH_BYTES = 8 << 20


@dataclasses.dataclass
class Written:
    """Rows sent to the database and rows it inserted (the rest were duplicates)."""

    memories_sent: int = 0
    memories_inserted: int = 0
    episodes_sent: int = 0
    episodes_inserted: int = 0


class BatchWriter:
    def __init__(self, conn: Connection, tenant_id: TenantId, queue: bool) -> None:
        self._conn, self._tenant_id, self._queue = conn, tenant_id, queue
        self.written = Written()
        self._memories: list[portability_queries.ImportMemory] = []
        self._episodes: list[portability_queries.ImportEpisode] = []
        self._bytes = 0
        self._task: asyncio.Task[None] | None = None

    async def add_memory(self, row: portability_queries.ImportMemory, size: int) -> None:
        self._memories.append(row)
        await self._grow(size)

    async def add_episode(self, row: portability_queries.ImportEpisode, size: int) -> None:
        self._episodes.append(row)
        await self._grow(size)

    async def _grow(self, size: int) -> None:
        self._bytes += size
        rows = max(len(self._memories), len(self._episodes))
        if rows >= BATCH_ROWS or self._bytes >= BATCH_BYTES:
            await self.flush()

    async def flush(self) -> None:
        """Start writing what is buffered (after the write in flight has finished)."""
        await self.settle()
        if not (self._memories or self._episodes):
            return
        memories, episodes = self._memories, self._episodes
        self._memories, self._episodes, self._bytes = [], [], 0
        self._task = asyncio.create_task(self._write(memories, episodes))

    async def settle(self) -> None:
        """Wait for the write in flight; its error (e.g. WriteRefused) is raised here."""
        task, self._task = self._task, None
        if task is not None:
            await task

    async def abandon(self) -> None:
        """Stop a write in flight (the import failed elsewhere) so the rollback can run."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _write(
        self,
        memories: list[portability_queries.ImportMemory],
        episodes: list[portability_queries.ImportEpisode],
    ) -> None:
        written = self.written
        if memories:
            inserted = await portability_queries.import_memories(
                self._conn, self._tenant_id, memories, self._queue
            )
            written.memories_sent += len(memories)
            written.memories_inserted += inserted
        if episodes:
            inserted = await portability_queries.import_episodes(
                self._conn, self._tenant_id, episodes, self._queue
            )
            written.episodes_sent += len(episodes)
            written.episodes_inserted += inserted
