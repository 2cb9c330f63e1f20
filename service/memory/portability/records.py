"""Import records checked and cleaned like the write seam (docs/portability.md, "Import rules";
docs/tools.md, "Store steps").

Import is the stricter seam, not the looser one: a file may come from another
database, an older version or a hand edit. Content and summaries are sanitised
and capped like ``store`` (a cut is noted), sources normalised, oversized
source/metadata and unstorable text refused, identifiers bounded. Times,
recall statistics and embeddings that cannot be read are dropped with a note
rather than failing the row. Each function returns a :class:`Prepared`: the
row to write (its agent id still 0), whether a refusal counts as a skip, and
the notes for the response's ``errors``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from datetime import datetime
from typing import Generic, TypeVar

from service.config import Settings
from service.db import portability as portability_queries
from service.memory import text
from service.memory.portability import jsonl
from service.models import JsonObject

T = TypeVar("T")
INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True, slots=True)
class Prepared(Generic[T]):
    """A checked record: ``row`` to write, or None with ``counted`` saying whether the
    refusal is a skip (CPersona counts some refusals, silently ignores others)."""

    row: T | None
    counted: bool = True
    notes: tuple[str, ...] = ()


class _Refused(Exception):
    """The record cannot be imported; ``args[0]`` is the note (None: no note)."""


class _Notes:
    """The notes of one line, each prefixed ``Line N:`` as CPersona writes them."""

    def __init__(self, line: int, kind: str, scan: bool) -> None:
        self.line = line
        self.kind = kind
        self.scan = scan
        self.items: list[str] = []

    def add(self, message: str) -> None:
        self.items.append(f"Line {self.line}: {message}")


def _string(record: JsonObject, name: str, notes: _Notes, limit: int | None = None) -> str:
    """A text field: absent or null is ''; another type or over ``limit`` refuses the row."""
    value = record.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Refused(f"{notes.kind} field {name!r} is not a string; it was not imported")
    if limit is not None and len(value) > limit:
        raise _Refused(f"{name} too long ({len(value)} chars, max {limit}); it was not imported")
    return value


def _optional_string(record: JsonObject, name: str) -> str | None:
    value = record.get(name)
    return value if isinstance(value, str) else None


def _time(record: JsonObject, name: str, notes: _Notes) -> datetime | None:
    try:
        return jsonl.parse_time(record.get(name))
    except ValueError as exc:
        notes.add(f"{name} {exc}; {'import time' if name == 'created_at' else 'null'} used")
        return None


def _embedding(record: JsonObject, notes: _Notes) -> list[float] | None:
    try:
        return jsonl.decode_embedding(record.get("embedding_b64"))
    except ValueError as exc:
        notes.add(f"{exc}; the {notes.kind} was imported without it")
        return None


def _recall_count(record: JsonObject) -> int:
    """A count the column can hold (0..2^31-1); anything else is 0."""
    value = record.get("recall_count")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(0, min(INT32_MAX, int(value)))


def _clean(raw: object, notes: _Notes, what: str, limit: int) -> str:
    """Sanitised text; empty raw input refuses silently, empty after cleaning with a note."""
    if raw is None or raw == "":
        raise _Refused(None)
    if not isinstance(raw, str):
        raise _Refused(f"{what} is not a string; it was not imported")
    clean = text.sanitise(raw, limit)
    if not clean.text:
        raise _Refused(f"{what} is empty after sanitisation; it was not imported")
    if clean.truncated:
        notes.add(f"{what} exceeded the {limit}-character cap and was truncated")
    return clean.text


_RISKY_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def needs_scan(line: str) -> bool:
    """Whether a JSON line can decode to text Postgres cannot store or to deep nesting.

    A parsed line holds NUL or a lone surrogate only through a ``\\u0000`` or
    ``\\uD800``-``\\uDFFF`` escape (raw control characters are invalid JSON, raw
    surrogates invalid UTF-8), and it nests deeper than text.MAX_DEPTH only with
    more brackets than that. Lines without either skip the recursive walk: on a
    large import that walk would cost more than parsing.
    """
    if _RISKY_ESCAPE.search(line):
        return True
    return line.count("{") + line.count("[") > text.MAX_DEPTH


def _unstorable(record: JsonObject, notes: _Notes) -> None:
    if not notes.scan:
        return
    problem = text.text_problem(record)
    if problem:
        raise _Refused(f"{problem}; the {notes.kind} was not imported")


def _json_field(value: object, name: str, settings: Settings) -> str:
    """The value serialised for jsonb; refused over the store's size limit (same measure:
    JSON with ASCII escaping, which is also what is sent)."""
    serialised = json.dumps(value, ensure_ascii=True)
    limit = settings.max_metadata_length
    if len(serialised) > limit:
        size = len(serialised)
        raise _Refused(f"{name} too large ({size} chars, max {limit}); the memory was not imported")
    return serialised


def _memory(
    record: JsonObject, notes: _Notes, settings: Settings
) -> portability_queries.ImportMemory:
    content = _clean(record.get("content"), notes, "memory content", settings.max_content_length)
    _unstorable(record, notes)
    axis = settings.max_axis_length
    metadata = record.get("metadata")
    stamp = _string(record, "timestamp", notes)
    return portability_queries.ImportMemory(
        agent_id=0,
        project_id=_string(record, "project_id", notes, axis),
        channel=_string(record, "channel", notes, axis),
        msg_id=_string(record, "msg_id", notes, settings.max_msg_id_length),
        content=content,
        source_json=_json_field(text.normalise_source(record.get("source")), "source", settings),
        timestamp_text=stamp,
        timestamp_at=text.parse_timestamp(stamp),
        metadata_json=_json_field({} if metadata is None else metadata, "metadata", settings),
        created_at=_time(record, "created_at", notes),
        locked=bool(record.get("locked")),
        recall_count=_recall_count(record),
        last_recalled_at=_time(record, "last_recalled_at", notes),
        embedding=_embedding(record, notes),
    )


def _keywords(value: object, notes: _Notes, limit: int) -> str:
    joined = " ".join(str(k) for k in value) if isinstance(value, list) else str(value or "")
    clean = text.sanitise(joined, limit)
    if clean.truncated:
        notes.add(f"episode keywords exceeded the {limit}-character cap and were truncated")
    return clean.text


def _episode(
    record: JsonObject, notes: _Notes, settings: Settings
) -> portability_queries.ImportEpisode:
    limit = settings.max_content_length
    summary = _clean(record.get("summary"), notes, "episode summary", limit)
    _unstorable(record, notes)
    axis = settings.max_axis_length
    return portability_queries.ImportEpisode(
        agent_id=0,
        project_id=_string(record, "project_id", notes, axis),
        channel=_string(record, "channel", notes, axis),
        summary=summary,
        keywords=_keywords(record.get("keywords"), notes, limit),
        start_time=_optional_string(record, "start_time"),
        end_time=_optional_string(record, "end_time"),
        resolved=bool(record.get("resolved")),
        created_at=_time(record, "created_at", notes),
        embedding=_embedding(record, notes),
    )


def _profile(
    record: JsonObject, notes: _Notes, settings: Settings
) -> portability_queries.ImportProfile:
    try:
        content = _clean(record.get("content"), notes, "profile", settings.max_profile_length)
    except _Refused as refused:
        reason = refused.args[0] or "profile has no content; it was not imported"
        kept = reason.replace("it was not imported", "the existing profile was kept")
        raise _Refused(kept) from None
    _unstorable(record, notes)
    axis = settings.max_axis_length
    return portability_queries.ImportProfile(
        agent_id=0,
        user_id=_string(record, "user_id", notes, axis),
        project_id=_string(record, "project_id", notes, axis),
        content=content,
        updated_at=_time(record, "updated_at", notes),
    )


def _prepared(row: T | None, notes: _Notes, counted: bool = True) -> Prepared[T]:
    return Prepared(row, counted, tuple(notes.items))


def prepare_memory(
    record: JsonObject, line: int, settings: Settings, scan: bool = True
) -> Prepared[portability_queries.ImportMemory]:
    """``scan``: walk the record for unstorable text (see :func:`needs_scan`)."""
    notes = _Notes(line, "memory", scan)
    try:
        return _prepared(_memory(record, notes, settings), notes)
    except _Refused as refused:
        if refused.args[0]:
            notes.add(refused.args[0])
        return _prepared(None, notes)


def prepare_episode(
    record: JsonObject, line: int, settings: Settings, scan: bool = True
) -> Prepared[portability_queries.ImportEpisode]:
    """An episode without summary is ignored, not counted (CPersona); other refusals skip."""
    notes = _Notes(line, "episode", scan)
    try:
        return _prepared(_episode(record, notes, settings), notes)
    except _Refused as refused:
        if refused.args[0] is None:
            notes.add("episode has no summary; it was not imported")
            return _prepared(None, notes, counted=False)
        notes.add(refused.args[0])
        return _prepared(None, notes)


def prepare_profile(
    record: JsonObject, line: int, settings: Settings, scan: bool = True
) -> Prepared[portability_queries.ImportProfile]:
    notes = _Notes(line, "profile", scan)
    try:
        return _prepared(_profile(record, notes, settings), notes)
    except _Refused as refused:
        notes.add(refused.args[0])
        return _prepared(None, notes, counted=False)
