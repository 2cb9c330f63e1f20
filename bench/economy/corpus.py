"""The token-economy corpus: LoCoMo sessions cut into long chunks and short turns (pure).

One agent per LoCoMo conversation. Each session is walked in order and cut into
memories that alternate between a *long* chunk (consecutive turns joined by newlines
until a deterministic target of 1,000-4,000 characters, taken from a CRC32 of the
position) and a *short* memory (the next single turn, when it is under 300
characters). A session tail too small for a chunk is stored as single turns. Every
turn lands in exactly one memory, so each evidence turn has one row and one offset.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import Conversation, Question, Turn, conversation_of, read_samples
from bench.harness.stats import describe

PREVIEW_CHARS = 500  # the design's preview length, pinned in the service under test
EXCERPT_CHARS = 240  # the window of a unit too long to show whole: excerpt.EXCERPT_CHARS
LONGEST_EXCERPT = 400  # a unit shown whole (issue 34): the service's excerpt.UNIT_CHARS
LONG_MIN, LONG_MAX = 1_000, 4_000
SHORT_MAX = 300
LENGTH_BUCKETS = (300, 500, 1_000, 2_000, 3_000, 4_000)


@dataclasses.dataclass(frozen=True)
class Span:
    """Where one turn sits inside a memory's content (code points, end exclusive)."""

    dia_id: str
    start: int
    end: int


@dataclasses.dataclass(frozen=True)
class Memory:
    """One stored memory: its msg_id, content, date, kind and the turns it holds."""

    msg_id: str
    content: str
    timestamp: str
    long: bool
    spans: tuple[Span, ...]


def target_length(key: str) -> int:
    """A deterministic chunk target in ``[LONG_MIN, LONG_MAX]`` derived from ``key``."""
    return LONG_MIN + zlib.crc32(key.encode()) % (LONG_MAX - LONG_MIN + 1)


def make_memory(turns: Sequence[Turn], long: bool) -> Memory:
    """Join ``turns`` with newlines; the msg_id names the first and last turn."""
    spans, parts, offset = [], [], 0
    for turn in turns:
        spans.append(Span(turn.dia_id, offset, offset + len(turn.content)))
        parts.append(turn.content)
        offset += len(turn.content) + 1
    msg_id = turns[0].dia_id if len(turns) == 1 else f"{turns[0].dia_id}..{turns[-1].dia_id}"
    return Memory(msg_id, "\n".join(parts), turns[0].timestamp, long, tuple(spans))


def chunk_size(turns: Sequence[Turn], target: int) -> int:
    """How many leading ``turns`` make one chunk: grow until ``target`` is reached,
    never past ``LONG_MAX`` (a first turn is always taken)."""
    size = count = 0
    for turn in turns:
        grown = size + len(turn.content) + (1 if count else 0)
        if count and grown > LONG_MAX:
            break
        size, count = grown, count + 1
        if size >= target:
            break
    return count


def _tail(turns: Sequence[Turn]) -> list[Memory]:
    """A session tail below ``LONG_MIN``: single short memories when every turn is short,
    else one (undersized) chunk so that no turn is lost."""
    if all(len(t.content) < SHORT_MAX for t in turns):
        return [make_memory([t], long=False) for t in turns]
    return [make_memory(turns, long=True)]


def chunk_session(turns: Sequence[Turn], key: str) -> list[Memory]:
    """Cut one session into alternating long chunks and short single turns.

    A turn of ``SHORT_MAX`` characters or more never stands alone: it starts a chunk.
    Deterministic: the chunk targets depend only on ``key`` and the position.
    """
    memories: list[Memory] = []
    start, want_long = 0, True
    while start < len(turns):
        rest = turns[start:]
        if not want_long and len(rest[0].content) < SHORT_MAX:
            memories.append(make_memory(rest[:1], long=False))
            start += 1
        else:
            count = chunk_size(rest, target_length(f"{key}/{len(memories)}"))
            if len("\n".join(t.content for t in rest[:count])) < LONG_MIN:
                memories.extend(_tail(rest[:count]))
            else:
                memories.append(make_memory(rest[:count], long=True))
            start += count
        want_long = not want_long
    return memories


def build_corpus(conv: Conversation) -> list[Memory]:
    """Every session of one conversation, chunked (sessions never share a memory)."""
    sessions: dict[str, list[Turn]] = {}
    for raw in conv.turns:
        turn = dataclasses.replace(raw, content=raw.content.strip())  # the service strips too
        sessions.setdefault(turn.dia_id.split(":", 1)[0], []).append(turn)
    return [
        m
        for name, turns in sessions.items()
        for m in chunk_session(turns, f"{conv.sample_id}/{name}")
    ]


def length_distribution(memories: Sequence[Memory]) -> dict[str, Any]:
    """Counts and length statistics per kind, plus a histogram over ``LENGTH_BUCKETS``."""
    out: dict[str, Any] = {}
    for kind, chosen in (("long", True), ("short", False)):
        lengths = [len(m.content) for m in memories if m.long is chosen]
        out[kind] = describe(lengths) | {"total_chars": sum(lengths)}
    edges = (0, *LENGTH_BUCKETS, math.inf)
    out["histogram"] = {
        f"{lo}-{hi}" if hi != math.inf else f">{lo}": sum(
            lo <= len(m.content) < hi for m in memories
        )
        for lo, hi in itertools.pairwise(edges)
    }
    out["count"] = len(memories)
    out["rows_over_preview"] = sum(len(m.content) > PREVIEW_CHARS for m in memories)
    return out


@dataclasses.dataclass(frozen=True)
class Placement:
    """The memory holding each turn of one conversation, by dia_id."""

    memory_of: Mapping[str, Memory]
    span_of: Mapping[str, Span]

    @classmethod
    def of(cls, memories: Iterable[Memory]) -> Placement:
        memory_of, span_of = {}, {}
        for memory in memories:
            for span in memory.spans:
                memory_of[span.dia_id], span_of[span.dia_id] = memory, span
        return cls(memory_of, span_of)


def load(
    path: Path, conversations: int | None
) -> tuple[list[Conversation], dict[tuple[str, int], str]]:
    """Conversations (all their questions with evidence) and the answers by question."""
    samples = read_samples(path, conversations)
    convs = [conversation_of(s, None) for s in samples]
    answers = {
        (s["sample_id"], n): str(qa["answer"])
        for s in samples
        for n, qa in enumerate(s["qa"])
        if "answer" in qa
    }
    return convs, answers


def sample_questions(conv: Conversation, count: int | None) -> list[Question]:
    """A deterministic sample: questions ordered by CRC32 of their id, first ``count``."""
    ordered = sorted(conv.questions, key=lambda q: zlib.crc32(f"{q.sample_id}/{q.number}".encode()))
    return sorted(ordered[:count], key=lambda q: q.number)
