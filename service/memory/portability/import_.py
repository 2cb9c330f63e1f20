"""import: read ``cpersona-export/1.0`` (and 1.1) JSONL into a tenant
(docs/portability.md, "Import rules").

The input is a stream of byte chunks (an HTTP body, a file, stdin), split
into lines with bounded memory and written in batches, all in ONE transaction:
either the whole file lands or nothing does. Memories are deduplicated by the
exact-bucket unique indexes (msg_id, then content; a collision is a skip),
episodes by an identical (agent, project, channel, summary), profiles are
upserted keeping the file's ``updated_at``. Header counts that disagree with
the records present (a truncated or edited file) roll everything back.

A dry run executes exactly the same statements in the same transaction and
then rolls it back, so its counts are the real run's counts (within-file
duplicates included) and nothing is written. Re-importing a file is
idempotent: everything is skipped the second time.

A vector in the file is taken for the configured model's when it has that model's
declared width (the format does not name the model), so it keeps the model's name
and is not recomputed; a vector of another width is kept but queued for re-embedding.
Reading a file of the export area passes ``readable``: every record's own agent must
be readable by the caller, or the import is refused whole (:class:`AgentDenied`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import AsyncIterable, Callable, Sequence

from service.db import agents, portability as portability_queries
from service.db.pool import Connection
from service.errors import Refused
from service.memory import text
from service.memory.library import Library
from service.memory.portability import batches, graph, jsonl, records
from service.memory.portability.access import AgentDenied
from service.memory.portability.outcomes import GraphRecords, Imported
from service.memory.queue import backlog
from service.models import JsonObject, TenantId

MAX_LINE_BYTES = 4 << 20
"""No valid record comes near this (content is capped at 16,000 characters)."""
MAX_ERRORS = 1000
AGENT_CACHE = 10_000
COUNTED = {"memory": "memory_count", "episode": "episode_count", "profile": "profile_count"}
GRAPH_COUNTED = {"entity": "entity_count", "mention": "mention_count", "relation": "relation_count"}


@dataclasses.dataclass(frozen=True, slots=True)
class ImportRequest:
    target_agent_id: str = ""
    """Write every record to this agent; '' keeps each record's own agent_id."""
    dry_run: bool = False
    readable: Callable[[str], bool] | None = None
    """When set, each record's own agent_id must satisfy it (see the module docstring)."""


class Inconsistent(Exception):
    """The header's counts disagree with the records present: roll back."""


class _DryRun(Exception):
    """Raised at the end of a dry run to roll its writes back."""


def queue_embeddings(lib: Library) -> bool:
    """Whether written rows without an embedding are queued for the embedding worker."""
    return lib.settings.embedding_mode != "none" and lib.settings.task_queue_enabled


@dataclasses.dataclass
class Tally:
    """What one import did, and what the file held (for the header check)."""

    dry_run: bool
    profile_updated: bool = False
    imported_memories: int = 0
    skipped_memories: int = 0
    imported_episodes: int = 0
    skipped_episodes: int = 0
    header: JsonObject | None = None
    present: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    graph_imported: collections.Counter[str] = dataclasses.field(
        default_factory=collections.Counter
    )
    errors: list[str] = dataclasses.field(default_factory=list)
    unlisted_errors: int = 0

    def note(self, *messages: str) -> None:
        for message in messages:
            if len(self.errors) < MAX_ERRORS:
                self.errors.append(message)
            else:
                self.unlisted_errors += 1

    def error_list(self) -> list[str]:
        extra = [f"... and {self.unlisted_errors} more"] if self.unlisted_errors else []
        return self.errors + extra


def _parse(raw: bytes, number: int) -> tuple[JsonObject, bool] | str:
    """The line's JSON object and whether it needs the unstorable-text scan, or the
    note saying why it is not an object."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"Line {number}: not valid UTF-8"
    try:
        record = json.loads(line.lstrip("\ufeff"), parse_constant=_no_constant)
    except ValueError as exc:
        return f"Line {number}: invalid JSON: {exc}"
    except RecursionError:
        return f"Line {number}: invalid JSON: nested too deeply"
    if not isinstance(record, dict):
        return f"Line {number}: not a JSON object"
    return record, records.needs_scan(line)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


class _Run:
    """One import inside its transaction: agents, batches, counts."""

    def __init__(self, lib: Library, tenant_id: TenantId, conn: Connection, request: ImportRequest):
        self.lib, self.tenant_id, self.conn, self.request = lib, tenant_id, conn, request
        self.tally = Tally(request.dry_run)
        self.agents: dict[str, int] = {}
        self.writer = batches.BatchWriter(conn, tenant_id, queue_embeddings(lib))
        self.scan = True
        self.graph = graph.GraphImport(conn, tenant_id, imported=self.tally.graph_imported)
        provider = lib.embedder
        self.model = None if provider is None else (provider.name, provider.dimension)

    async def agent(self, name: str) -> int:
        if name not in self.agents:
            if len(self.agents) >= AGENT_CACHE:
                self.agents.clear()
            await self.writer.settle()
            self.agents[name] = await agents.ensure_agent(self.conn, self.tenant_id, name)
        return self.agents[name]

    async def line(self, number: int, raw: bytes | None) -> None:
        if raw is None:
            self.tally.note(f"Line {number}: longer than {MAX_LINE_BYTES} bytes; skipped")
            return
        if not raw.strip():
            return
        parsed = _parse(raw, number)
        if isinstance(parsed, str):
            self.tally.note(parsed)
            return
        record, self.scan = parsed
        await self.record(record, number, len(raw))

    async def record(self, record: JsonObject, number: int, size: int) -> None:
        kind = record.get("_type")
        if not isinstance(kind, str):
            self.tally.note(f"Line {number}: record has no _type")
        elif kind == "header":
            self.header(record, number)
        elif kind in COUNTED or kind in GRAPH_COUNTED:
            self.tally.present[kind] += 1
            if kind in COUNTED:
                await self.item(kind, record, number, size)
            else:
                await self.declaration(kind, record)
        else:
            self.tally.note(f"Line {number}: unknown type {kind!r}")

    async def declaration(self, kind: str, record: JsonObject) -> None:
        """A graph record, after every row it may name is written; a skip is counted."""
        self.check_readable(record)
        await self.writer.flush()
        await self.writer.settle()
        name = self.request.target_agent_id or record.get("agent_id")
        if kind == "mention" or (isinstance(name, str) and name):
            agent = await self.agent(name) if isinstance(name, str) and name else None
            await self.graph.add(kind, record, agent)

    def header(self, record: JsonObject, number: int) -> None:
        self.tally.header = record
        self.graph.active = any(_declared(record, key) for key in GRAPH_COUNTED.values())
        version = record.get("version")
        if version not in jsonl.READABLE_VERSIONS:
            self.tally.note(f"Line {number}: unknown version {version!r}; read as 1.0")

    def agent_name(self, kind: str, record: JsonObject, number: int) -> str | None:
        """The record's target agent, or None after noting why there is none."""
        name = self.request.target_agent_id or record.get("agent_id")
        limit = self.lib.settings.max_axis_length
        if not isinstance(name, str) or not name:
            self.tally.note(f"Line {number}: {kind} missing agent_id")
        elif len(name) > limit:
            self.tally.note(f"Line {number}: agent_id too long ({len(name)} chars, max {limit})")
        else:
            return name
        return None

    def model_of(self, embedding: Sequence[float] | None) -> str | None:
        """The configured model's name for a vector of its declared width, else None."""
        if self.model is None or embedding is None:
            return None
        return self.model[0] if len(embedding) == self.model[1] else None

    def check_readable(self, record: JsonObject) -> None:
        source = record.get("agent_id")
        readable = self.request.readable
        if readable is not None and isinstance(source, str) and source and not readable(source):
            raise AgentDenied(source, "read")

    async def item(self, kind: str, record: JsonObject, number: int, size: int) -> None:
        self.check_readable(record)
        name = self.agent_name(kind, record, number)
        if name is None:
            return
        if kind == "memory":
            await self.memory(name, record, number, size)
        elif kind == "episode":
            await self.episode(name, record, number, size)
        else:
            await self.profile(name, record, number)

    async def memory(self, name: str, record: JsonObject, number: int, size: int) -> None:
        prepared = records.prepare_memory(record, number, self.lib.settings, self.scan)
        self.tally.note(*prepared.notes)
        if prepared.row is None:
            self.tally.skipped_memories += 1
            return
        agent = await self.agent(name)
        model = self.model_of(prepared.row.embedding)
        row = dataclasses.replace(prepared.row, agent_id=agent, embedding_model=model)
        self.graph.remember("mem", record.get("id"), row, row.content)
        await self.writer.add_memory(row, size)

    async def episode(self, name: str, record: JsonObject, number: int, size: int) -> None:
        prepared = records.prepare_episode(record, number, self.lib.settings, self.scan)
        self.tally.note(*prepared.notes)
        if prepared.row is None:
            self.tally.skipped_episodes += int(prepared.counted)
            return
        agent = await self.agent(name)
        model = self.model_of(prepared.row.embedding)
        row = dataclasses.replace(prepared.row, agent_id=agent, embedding_model=model)
        self.graph.remember("ep", record.get("id"), row, row.summary)
        await self.writer.add_episode(row, size)

    async def profile(self, name: str, record: JsonObject, number: int) -> None:
        prepared = records.prepare_profile(record, number, self.lib.settings, self.scan)
        self.tally.note(*prepared.notes)
        if prepared.row is not None:
            agent = await self.agent(name)
            row = dataclasses.replace(prepared.row, agent_id=agent)
            await self.writer.settle()
            await portability_queries.import_profile(self.conn, self.tenant_id, row)
            self.tally.profile_updated = True

    async def finish(self) -> None:
        """Write what is still buffered and add the database's counts to the tally."""
        await self.writer.flush()
        await self.writer.settle()
        written, tally = self.writer.written, self.tally
        tally.imported_memories += written.memories_inserted
        tally.skipped_memories += written.memories_sent - written.memories_inserted
        tally.imported_episodes += written.episodes_inserted
        tally.skipped_episodes += written.episodes_sent - written.episodes_inserted


def _declared(header: JsonObject, key: str) -> int | None:
    value = header.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_header(tally: Tally) -> None:
    """Raise Inconsistent when an integer header count differs from the records present."""
    if tally.header is None:
        return
    wanted = {**COUNTED, **GRAPH_COUNTED}
    if all(
        _declared(tally.header, key) in (None, tally.present[kind]) for kind, key in wanted.items()
    ):
        return
    declared = [_declared(tally.header, key) for key in COUNTED.values()]
    found = [tally.present[kind] for kind in COUNTED]
    message = (
        "file truncated or inconsistent: header declares "
        f"{declared[0]} memories / {declared[1]} episodes / {declared[2]} profiles, "
        f"file contains {found[0]} / {found[1]} / {found[2]}"
    )
    graph = [(kind, _declared(tally.header, key)) for kind, key in GRAPH_COUNTED.items()]
    for kind, count in graph:
        if count not in (None, tally.present[kind]):
            message += f"; {kind} records: header {count}, file {tally.present[kind]}"
    raise Inconsistent(message)


def _outcome(tally: Tally) -> Imported:
    imported = {kind: tally.graph_imported[kind] for kind in GRAPH_COUNTED}
    skipped = {kind: tally.present[kind] - imported[kind] for kind in GRAPH_COUNTED}
    return Imported(
        dry_run=tally.dry_run,
        imported_memories=tally.imported_memories,
        skipped_memories=tally.skipped_memories,
        imported_episodes=tally.imported_episodes,
        skipped_episodes=tally.skipped_episodes,
        profile_updated=tally.profile_updated,
        imported_graph=GraphRecords.of(imported),
        graph=GraphRecords.of(skipped),
        errors=tuple(tally.error_list()) if tally.errors else (),
    )


def _aborted(tally: Tally, reason: str) -> Refused:
    """Nothing was written: imported counts are 0, skips and notes say what was read."""
    details: JsonObject = {
        "dry_run": tally.dry_run,
        "imported_memories": 0,
        "skipped_memories": tally.skipped_memories,
        "imported_episodes": 0,
        "skipped_episodes": tally.skipped_episodes,
        "profile_updated": False,
    }
    if tally.errors:
        details["errors"] = tally.error_list()
    return Refused(f"import aborted and rolled back: {reason}", **details)


async def import_jsonl(
    lib: Library, tenant_id: TenantId, chunks: AsyncIterable[bytes], request: ImportRequest
) -> Imported:
    """Import a JSONL stream in one transaction; what it did.

    A file whose header counts disagree with its records, or a row the database
    refuses, rolls everything back and raises Refused with the tallies as details.
    Exceptions raised by ``chunks`` (e.g. an input-size limit) roll the import
    back and propagate to the caller.
    """
    run: _Run | None = None
    try:
        async with lib.db.tenant_tx(tenant_id) as conn:
            run = _Run(lib, tenant_id, conn, request)
            try:
                await _consume(run, chunks)
                await run.finish()
            finally:
                await run.writer.abandon()  # a no-op unless something failed mid-write
            check_header(run.tally)
            if request.dry_run:
                raise _DryRun
    except _DryRun:
        pass
    except (Inconsistent, portability_queries.WriteRefused) as exc:
        assert run is not None
        raise _aborted(run.tally, str(exc)) from None
    assert run is not None
    if not request.dry_run:  # rows imported with their vectors: their passages now
        await backlog.queue_passages_after_bulk(lib, tenant_id)
    return _outcome(run.tally)


async def _consume(run: _Run, chunks: AsyncIterable[bytes]) -> None:
    splitter = jsonl.LineSplitter(MAX_LINE_BYTES)
    async for chunk in chunks:
        for number, raw in splitter.feed(chunk):
            await run.line(number, raw)
    for number, raw in splitter.finish():
        await run.line(number, raw)


class AgentScanner:
    """The agents whose records a JSONL stream holds, read the way an import reads them
    (same line splitting and parsing): what an upload to the export area records."""

    def __init__(self) -> None:
        self._splitter = jsonl.LineSplitter(MAX_LINE_BYTES)
        self.agents: set[str] = set()

    def feed(self, chunk: bytes) -> None:
        for _, raw in self._splitter.feed(chunk):
            self._line(raw)

    def finish(self) -> set[str]:
        for _, raw in self._splitter.finish():
            self._line(raw)
        return self.agents

    def _line(self, raw: bytes | None) -> None:
        if raw is None or not raw.strip():
            return
        parsed = _parse(raw, 0)
        if isinstance(parsed, str):
            return
        record = parsed[0]
        kind, agent = record.get("_type"), record.get("agent_id")
        if not isinstance(kind, str) or kind not in COUNTED or not isinstance(agent, str):
            return
        if agent and text.text_problem(agent) is None:  # else the import refuses the line
            self.agents.add(agent)
