"""export: stream an agent's (or the whole tenant's) memory as ``cpersona-export/1.0``,
or ``cpersona-export/1.1`` when it has declarations (the graph's records follow the rows).

One read-only REPEATABLE READ transaction gives the header counts and every
row after them the same snapshot, so the header always matches the body even
while clients keep writing. Rows come from server-side cursors in batches and
each batch goes to the caller's ``sink`` as one chunk of lines before the next
is read: memory use does not depend on the size of the export. The sink is
whatever the caller streams to (an HTTP response, a temporary file, stdout).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from service.db import agents, associations as graph_queries, portability as portability_queries
from service.memory.library import Library
from service.memory.portability import graph, jsonl
from service.models import JsonObject, TenantId

BATCH_ROWS = 500
Sink = Callable[[bytes], Awaitable[None]]
Progress = Callable[[int, int], None]
"""Called with (rows written, rows in the export) after every batch."""


@dataclasses.dataclass(frozen=True, slots=True)
class ExportRequest:
    agent_id: str = ""
    """The agent to export; '' exports every agent of the tenant."""
    include_embeddings: bool = False


@dataclasses.dataclass
class _Writer:
    sink: Sink
    total: int
    progress: Progress | None
    agents: set[str]
    written: int = 0

    async def lines(self, records: list[JsonObject]) -> None:
        self.agents.update(record["agent_id"] for record in records if "agent_id" in record)
        await self.sink(b"".join(jsonl.dump_line(record) for record in records))
        self.written += len(records)
        if self.progress is not None:
            self.progress(self.written, self.total)


def _total(counts: portability_queries.ItemCounts) -> int:
    return counts.memories + counts.episodes + counts.profiles


async def export_jsonl(
    lib: Library,
    tenant_id: TenantId,
    request: ExportRequest,
    sink: Sink,
    progress: Progress | None = None,
    seen: set[str] | None = None,
) -> portability_queries.ItemCounts:
    """Write the header and every record to ``sink``; the counts written.

    An unknown agent exports a header with zero counts (nothing is created).
    ``seen``, when given, receives the agent_id of every record written.
    """
    embeddings = request.include_embeddings
    async with lib.db.tenant_tx(tenant_id, snapshot=True) as conn:
        agent: int | None = None
        if request.agent_id:
            agent = await agents.agent_id_by_name(conn, tenant_id, request.agent_id)
        graph_counts = graph_queries.GraphCounts(0, 0, 0)
        if request.agent_id and agent is None:
            counts = portability_queries.ItemCounts(0, 0, 0)
        else:
            counts = await portability_queries.item_counts(conn, tenant_id, agent)
            graph_counts = await graph_queries.graph_counts(conn, tenant_id, agent)
        now = datetime.now(UTC)
        header = jsonl.header_record(request.agent_id, counts, now)
        await sink(jsonl.dump_line(jsonl.with_graph(header, graph_counts)))
        total = _total(counts) + sum(dataclasses.astuple(graph_counts))
        out = _Writer(sink, total, progress, set() if seen is None else seen)
        if request.agent_id and agent is None:
            return counts
        async for memories in portability_queries.export_batches(
            conn, portability_queries.ExportMemory, tenant_id, agent, embeddings, BATCH_ROWS
        ):
            await out.lines([jsonl.memory_record(row) for row in memories])
        async for episodes in portability_queries.export_batches(
            conn, portability_queries.ExportEpisode, tenant_id, agent, embeddings, BATCH_ROWS
        ):
            await out.lines([jsonl.episode_record(row) for row in episodes])
        async for profiles in portability_queries.export_batches(
            conn, portability_queries.ExportProfile, tenant_id, agent, embeddings, BATCH_ROWS
        ):
            await out.lines([jsonl.profile_record(row) for row in profiles])
        if any(dataclasses.astuple(graph_counts)):
            async for records in graph.graph_batches(conn, tenant_id, agent, BATCH_ROWS):
                await out.lines(records)
    return counts
