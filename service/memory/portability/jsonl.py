"""The ``cpersona-export/1.0`` JSONL record format (docs/portability.md, "The format"), both
directions.

Pure functions: record builders for export, the time and embedding encodings,
and a line splitter for streamed input. Lines are ``json.dumps(record,
ensure_ascii=False)`` plus ``\\n`` with CPersona's key order, so files are
byte-compatible with CPersona's own exports. Times are written the way
CPersona's SQLite stores them (``YYYY-MM-DD HH:MM:SS``, naive UTC) and read in
that form or as ISO-8601. Embeddings are the base64 of little-endian float32.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from collections.abc import Sequence
from datetime import UTC, datetime

from service.db import associations, portability as portability_queries
from service.memory import text
from service.models import JsonObject

FORMAT_VERSION = "cpersona-export/1.0"
READABLE_VERSIONS = ("cpersona-export/1.0", "cpersona-export/1.1")
GRAPH_TYPES = ("entity", "mention", "relation")
MAX_DIMENSIONS = 16_000
"""pgvector's limit for one vector; wider embeddings cannot be stored."""


def dump_line(record: JsonObject) -> bytes:
    """One JSONL line exactly as CPersona writes it."""
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def cpersona_time(moment: datetime | None) -> str | None:
    """``YYYY-MM-DD HH:MM:SS`` in UTC (SQLite's ``datetime('now')`` form); None stays None.

    Sub-second precision is dropped: CPersona's columns have none, and its
    readers compare these strings lexicographically.
    """
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def parse_time(value: object) -> datetime | None:
    """A record's time: None when absent or empty; ValueError when present but unreadable.

    Accepts CPersona's ``YYYY-MM-DD HH:MM:SS`` and ISO-8601; naive values are UTC.
    """
    if value is None or value == "":
        return None
    parsed = text.parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValueError(f"{value!r} is not a timestamp")
    return parsed


def encode_embedding(values: Sequence[float]) -> str:
    """base64 of the vector as little-endian float32 (CPersona's blob layout)."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def decode_embedding(value: object) -> list[float] | None:
    """The vector of an ``embedding_b64`` value; None when absent.

    Raises ValueError (with the reason) for anything that cannot be stored: not
    base64, a byte length that is not a non-zero multiple of 4, more than
    16,000 dimensions, or NaN/infinity components.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("embedding_b64 is not a string")
    try:
        blob = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("embedding_b64 is not base64") from None
    if not blob or len(blob) % 4:
        raise ValueError(f"embedding is {len(blob)} bytes, not a whole number of float32 values")
    if len(blob) // 4 > MAX_DIMENSIONS:
        raise ValueError(f"embedding has {len(blob) // 4} dimensions (max {MAX_DIMENSIONS})")
    values = list(struct.unpack(f"<{len(blob) // 4}f", blob))
    if not math.isfinite(sum(values)):  # any NaN or infinity makes the sum non-finite
        raise ValueError("embedding contains NaN or infinity")
    return values


def header_record(
    agent_id: str, counts: portability_queries.ItemCounts, exported_at: datetime
) -> JsonObject:
    return {
        "_type": "header",
        "version": FORMAT_VERSION,
        "agent_id": agent_id,
        "exported_at": exported_at.isoformat(),
        "memory_count": counts.memories,
        "episode_count": counts.episodes,
        "has_profile": counts.profiles > 0,
        "profile_count": counts.profiles,
    }


GRAPH_VERSION = "cpersona-export/1.1"
"""Written when the export holds declarations (CPersona 2.6's graph); 1.0 otherwise, so an
export without them stays byte-identical to 2.5's."""


def with_graph(header: JsonObject, counts: associations.GraphCounts) -> JsonObject:
    """The header of an export with declarations: version 1.1 and the three graph counts."""
    if not any((counts.entities, counts.mentions, counts.relations)):
        return header
    return {
        **header,
        "version": GRAPH_VERSION,
        "entity_count": counts.entities,
        "mention_count": counts.mentions,
        "relation_count": counts.relations,
    }


def memory_record(row: portability_queries.ExportMemory) -> JsonObject:
    record: JsonObject = {
        "_type": "memory",
        "id": row.id,
        "agent_id": row.agent_name,
        "msg_id": row.msg_id,
        "content": row.content,
        "source": row.source,
        "timestamp": row.timestamp_text,
        "metadata": row.metadata,
        "created_at": cpersona_time(row.created_at),
        "project_id": row.project_id,
        "channel": row.channel,
        "locked": 1 if row.locked else 0,
        "recall_count": row.recall_count,
        "last_recalled_at": cpersona_time(row.last_recalled_at),
    }
    if row.embedding is not None:
        record["embedding_b64"] = encode_embedding(row.embedding)
    return record


def episode_record(row: portability_queries.ExportEpisode) -> JsonObject:
    record: JsonObject = {
        "_type": "episode",
        "id": row.id,
        "agent_id": row.agent_name,
        "summary": row.summary,
        "keywords": row.keywords,
        "start_time": row.start_time,
        "end_time": row.end_time,
        "created_at": cpersona_time(row.created_at),
        "resolved": row.resolved,
        "project_id": row.project_id,
        "channel": row.channel,
    }
    if row.embedding is not None:
        record["embedding_b64"] = encode_embedding(row.embedding)
    return record


def profile_record(row: portability_queries.ExportProfile) -> JsonObject:
    return {
        "_type": "profile",
        "agent_id": row.agent_name,
        "user_id": row.user_id,
        "content": row.content,
        "updated_at": cpersona_time(row.updated_at),
        "project_id": row.project_id,
    }


Line = tuple[int, bytes | None]
"""(1-based line number, the line's bytes without ``\\n``; None when it was too long)."""


class LineSplitter:
    """Cuts a byte stream into ``\\n``-terminated lines with bounded memory.

    A line longer than ``max_line`` bytes is never held whole: its bytes are
    dropped as they arrive and it is reported as None, so one hostile line
    cannot grow the buffer. (Splitting on ``\\n`` only, as CPersona does: U+2028
    is legal unescaped inside a JSON string.)
    """

    def __init__(self, max_line: int) -> None:
        self._max = max_line
        self._pending = bytearray()
        self._too_long = False
        self._number = 0

    def feed(self, chunk: bytes) -> list[Line]:
        lines: list[Line] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            lines.append(self._complete(chunk[start:end]))
            start = end + 1
        self._extend(chunk[start:])
        return lines

    def finish(self) -> list[Line]:
        """The last line when the stream did not end with ``\\n``."""
        if self._pending or self._too_long:
            return [self._complete(b"")]
        return []

    def _extend(self, part: bytes) -> None:
        if self._too_long:
            return
        if len(self._pending) + len(part) > self._max:
            self._too_long = True
            self._pending.clear()
        else:
            self._pending += part

    def _complete(self, tail: bytes) -> Line:
        self._number += 1
        self._extend(tail)
        line = None if self._too_long else bytes(self._pending)
        self._pending.clear()
        self._too_long = False
        return self._number, line
