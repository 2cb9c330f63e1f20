"""LoCoMo retrieval quality of ``recall`` through the real MCP/HTTP path.

``python -m bench.locomo [--modes none,local] [--tune] [--conversations N] [--questions N]``

Protocol (docs/benchmarks-recall.md): one agent per conversation (``agent_id`` =
``sample_id``); every turn stored with ``store`` as one memory (``message.id`` = its
dia_id, content ``"<speaker>: <text>"`` plus the photo caption, ``message.timestamp`` =
the session's date); every question with evidence is one ``recall`` (``limit: 10``),
its rows reversed (recall answers best-last) and mapped back to dia_ids through the
row's ``id``. Metrics come from :mod:`bench.quality`. With ``local`` embeddings the
run waits for ``get_queue_status.pending == 0`` before querying. ``--tune`` restarts
the service on the same data with each variant's settings and queries again.

The data set (CC BY-NC 4.0, arXiv:2402.17753) is read from
``../shared/data/locomo/locomo10.json`` (``--data``); it is never copied, and the
results hold only ids, categories and numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from bench import harness, quality
from bench.cli import env_pair, write_json, write_results
from bench.client import call_json, mcp_sessions, wait_queue_empty
from bench.embed import embed
from bench.harness import REPO_ROOT, BenchError
from bench.machine import machine_facts, record_end
from bench.markdown import machine_line, outcomes, table
from bench.snapshot import run_on_snapshot
from bench.stats import latency_stats

# --------------------------------------------------------------------------- data

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
LIMIT = 10  # every question is one recall of this many rows, scored at this depth


@dataclasses.dataclass(frozen=True)
class Turn:
    dia_id: str
    content: str
    timestamp: str


@dataclasses.dataclass(frozen=True)
class Question:
    sample_id: str
    number: int
    category: int
    text: str
    relevant: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], str]]:
    """``(number, turns, date text)`` of every session, in session order."""
    found = []
    for key, value in conversation.items():
        suffix = key.removeprefix("session_")
        if key.startswith("session_") and suffix.isdigit() and isinstance(value, list):
            found.append((int(suffix), value, str(conversation[f"{key}_date_time"])))
    return sorted(found, key=lambda item: item[0])


def conversation_of(sample: dict[str, Any], max_questions: int | None) -> Conversation:
    """One sample as turns to store and questions (with evidence) to ask."""
    turns = [
        Turn(str(t["dia_id"]), quality.turn_content(t), quality.session_timestamp(date))
        for _, session, date in _sessions(sample["conversation"])
        for t in session
    ]
    valid = {t.dia_id for t in turns}
    questions = []
    for number, qa in enumerate(sample["qa"]):
        relevant = quality.normalise_evidence(qa.get("evidence", []), valid)
        if relevant:
            questions.append(
                Question(
                    sample["sample_id"],
                    number,
                    int(qa["category"]),
                    str(qa["question"]),
                    tuple(relevant),
                )
            )
    return Conversation(sample["sample_id"], tuple(turns), tuple(questions[:max_questions]))


def read_samples(path: Path, conversations: int | None) -> list[dict[str, Any]]:
    """The first ``conversations`` raw samples of the data set file."""
    samples: list[dict[str, Any]] = json.loads(path.read_text())
    return samples[:conversations]


def load(path: Path, conversations: int | None, questions: int | None) -> list[Conversation]:
    """The first ``conversations`` samples, at most ``questions`` questions each."""
    return [conversation_of(s, questions) for s in read_samples(path, conversations)]


def questions_of(convs: Sequence[Conversation]) -> list[Question]:
    """Every question of ``convs``, conversation by conversation."""
    return [q for c in convs for q in c.questions]


# --------------------------------------------------------------------------- variants


@dataclasses.dataclass(frozen=True)
class Variant:
    """A query configuration: service settings plus the ``deep`` flag."""

    name: str
    env: dict[str, str]
    deep: bool = False


DEFAULT_VARIANTS = (Variant("default", {}), Variant("deep", {}, deep=True))
RSF_07 = {"CPERSONA_RECALL_MODE": "rsf", "CPERSONA_RSF_LEXICAL_WEIGHT": "0.7"}
TUNING_VARIANTS = (
    Variant("vector only (FTS off)", {"CPERSONA_FTS_ENABLED": "false"}),
    Variant("vector only, deep", {"CPERSONA_FTS_ENABLED": "false"}, deep=True),
    Variant("lexical only (mode none)", {"CPERSONA_EMBEDDING_MODE": "none"}),
    Variant("rrf k=10", {"CPERSONA_RRF_K": "10"}),
    Variant("rrf k=200", {"CPERSONA_RRF_K": "200"}),
    Variant("vector floor 0 (min sim 0)", {"CPERSONA_VECTOR_MIN_SIMILARITY": "0"}),
    Variant("vector floor 0.3 (factor 1.0)", {"CPERSONA_RRF_THRESHOLD_FACTOR": "1.0"}),
    Variant("vector floor 0.45 (min sim 0.9)", {"CPERSONA_VECTOR_MIN_SIMILARITY": "0.9"}),
    Variant("autocut off", {"CPERSONA_AUTOCUT_ENABLED": "false"}),
    Variant("rsf", {"CPERSONA_RECALL_MODE": "rsf"}),
    Variant("rsf, deep", {"CPERSONA_RECALL_MODE": "rsf"}, deep=True),
    Variant(
        "rsf, autocut off", {"CPERSONA_RECALL_MODE": "rsf", "CPERSONA_AUTOCUT_ENABLED": "false"}
    ),
    Variant("cascade", {"CPERSONA_RECALL_MODE": "cascade"}),
    Variant("rrf k=10, deep", {"CPERSONA_RRF_K": "10"}, deep=True),
    Variant("rrf, depth 50", {"CPERSONA_RECALL_DEPTH": "50"}),
    Variant(
        "rsf, lexical 0.7", {"CPERSONA_RECALL_MODE": "rsf", "CPERSONA_RSF_LEXICAL_WEIGHT": "0.7"}
    ),
    Variant("rsf, lexical 0.7, depth 100", {**RSF_07, "CPERSONA_RECALL_DEPTH": "100"}),
    Variant(
        "rsf, lexical 0.7, depth 100, deep", {**RSF_07, "CPERSONA_RECALL_DEPTH": "100"}, deep=True
    ),
    Variant(
        "rsf, lexical 0.6, depth 30",
        {
            "CPERSONA_RECALL_MODE": "rsf",
            "CPERSONA_RSF_LEXICAL_WEIGHT": "0.6",
            "CPERSONA_RECALL_DEPTH": "30",
        },
    ),
)


def variants_for(mode: str, tune: bool, names: Collection[str]) -> list[Variant]:
    """The variants to query under embedding ``mode``: the defaults, plus the tuning ones
    in local mode when ``tune``; only the ``names`` given, when any are."""
    chosen = list(DEFAULT_VARIANTS)
    if mode == "local" and tune:
        chosen += TUNING_VARIANTS
    if names:
        wanted = {v.strip() for v in names}
        unknown = wanted - {v.name for v in (*DEFAULT_VARIANTS, *TUNING_VARIANTS)}
        if unknown:
            raise BenchError(f"unknown variant(s): {sorted(unknown)}")
        chosen = [v for v in (*DEFAULT_VARIANTS, *TUNING_VARIANTS) if v.name in wanted]
    return chosen


# --------------------------------------------------------------------------- answers and scores


@dataclasses.dataclass(frozen=True)
class Answer:
    """One question's outcome: ranked dia_ids (best first), row signals, latency."""

    question: Question
    ranked: tuple[str, ...]
    vector_rows: tuple[bool, ...]
    seconds: float
    failed: bool
    gate_fallback: bool


def answer_of(
    q: Question, body: Mapping[str, Any], seconds: float, failed: bool, aliases: Mapping[str, str]
) -> Answer:
    """A recall body as an answer: rows reversed (recall answers best-last), each row's
    ``id`` mapped back to its dia_id (a skipped duplicate to the turn stored first)."""
    rows = list(reversed(body.get("messages") or []))
    ranked = tuple(
        aliases.get(f"{q.sample_id}/{row.get('id', '')}", str(row.get("id", ""))) for row in rows
    )
    vector = tuple("cosine" in (row.get("match_reason") or {}) for row in rows)
    return Answer(q, ranked, vector, seconds, failed, bool(body.get("gate_fallback")))


def diagnostics(answers: Sequence[Answer]) -> dict[str, Any]:
    """Row counts and where rows (and relevant rows) came from."""
    rows = [len(a.ranked) for a in answers]
    returned = sum(rows)
    relevant = [(a, i) for a in answers for i, d in enumerate(a.ranked) if d in a.question.relevant]
    vector_rows = sum(sum(a.vector_rows) for a in answers)
    return {
        "queries": len(answers),
        "failed": sum(a.failed for a in answers),
        "gate_fallback": sum(a.gate_fallback for a in answers),
        "fewer_than_10_rows": sum(n < LIMIT for n in rows),
        "zero_rows": sum(n == 0 for n in rows),
        "mean_rows": round(returned / len(answers), 2) if answers else 0.0,
        "rows_with_cosine_share": round(vector_rows / returned, 3) if returned else 0.0,
        "relevant_rows": len(relevant),
        "relevant_rows_with_cosine": sum(a.vector_rows[i] for a, i in relevant),
    }


def evaluate(answers: Sequence[Answer], wall_s: float) -> dict[str, Any]:
    """Metrics per category/overall/macro, diagnostics and recall latency."""
    per_question = [
        (a.question.category, quality.score(a.ranked, a.question.relevant, LIMIT)) for a in answers
    ]
    summary = quality.summarise(per_question)
    return {
        "metrics": {name: dataclasses.asdict(s) for name, s in summary.items()},
        "diagnostics": diagnostics(answers),
        "latency": dataclasses.asdict(latency_stats([a.seconds for a in answers], wall_s)),
    }


def per_question(answers: Sequence[Answer]) -> list[dict[str, Any]]:
    """Each question's ranked dia_ids and which rows carried a cosine (for analysis)."""
    return [
        {
            "sample": a.question.sample_id,
            "q": a.question.number,
            "cat": a.question.category,
            "relevant": list(a.question.relevant),
            "ranked": list(a.ranked),
            "cosine": [int(v) for v in a.vector_rows],
            "ms": round(a.seconds * 1000, 1),
        }
        for a in answers
    ]


# --------------------------------------------------------------------------- offline references

WHAT_IF_DEPTH = 100
FusionFn = Callable[[dict[str, float], dict[str, float]], list[str]]


def offline_bm25(convs: Sequence[Conversation]) -> dict[str, quality.Summary]:
    """Plain BM25 on the same corpus and questions (the protocol's sanity check)."""
    from service.memory.recall.query_terms import STOPWORDS

    per_question = []
    for conv in convs:
        index = quality.Bm25Index([(t.dia_id, t.content) for t in conv.turns], STOPWORDS)
        for q in conv.questions:
            per_question.append((q.category, quality.score(index.rank(q.text), q.relevant)))
    return quality.summarise(per_question)


def _rrf(k: int, depth: int, lexical_weight: float = 1.0) -> FusionFn:
    return lambda lex, vec: quality.fuse_rrf(
        [list(lex), list(vec)], k, [lexical_weight, 1.0], depth
    )


def _convex(lexical_weight: float, depth: int = WHAT_IF_DEPTH) -> FusionFn:
    def fuse(lex: dict[str, float], vec: dict[str, float]) -> list[str]:
        channels = [dict(list(c.items())[:depth]) for c in (lex, vec)]
        return quality.fuse_scores(channels, [lexical_weight, 1 - lexical_weight])

    return fuse


WHAT_IFS: dict[str, FusionFn] = {
    "BM25 alone": lambda lex, vec: list(lex),
    "MiniLM alone (exact cosine)": lambda lex, vec: list(vec),
    "rrf k=60, depth 10 (the service's shape)": _rrf(60, 10),
    "rrf k=60, depth 50": _rrf(60, 50),
    "rrf k=60, depth 100": _rrf(60, 100),
    "rrf k=60, depth 50, lexical x1.5": _rrf(60, 50, 1.5),
    "rrf k=60, depth 50, lexical x2": _rrf(60, 50, 2.0),
    "rrf k=60, depth 50, lexical x3": _rrf(60, 50, 3.0),
    "rrf k=10, depth 50, lexical x2": _rrf(10, 50, 2.0),
    "rrf k=60, depth 10, lexical x2": _rrf(60, 10, 2.0),
    "rrf k=60, depth 10, lexical wins ties": _rrf(60, 10, 1.000001),
    "min-max scores, depth 10, 0.5/0.5": _convex(0.5, 10),
    "min-max scores, depth 10, 0.7 lexical": _convex(0.7, 10),
    "min-max scores, depth 100, 0.5/0.5": _convex(0.5),
    "min-max scores, depth 100, 0.6 lexical": _convex(0.6),
    "min-max scores, depth 100, 0.7 lexical": _convex(0.7),
    "min-max scores, depth 100, 0.8 lexical": _convex(0.8),
    "min-max scores, depth 30, 0.7 lexical": _convex(0.7, 30),
}


def _vector_scores(turns: Sequence[Turn], questions: Sequence[Question]) -> list[dict[str, float]]:
    """Exact cosine top-``WHAT_IF_DEPTH`` per question with the service's local model."""
    import numpy as np

    vectors = np.asarray(
        asyncio.run(embed([t.content for t in turns] + [q.text for q in questions]))
    )
    docs, queries = vectors[: len(turns)], vectors[len(turns) :]
    out = []
    for row in queries @ docs.T:
        best = np.argsort(-row, kind="stable")[:WHAT_IF_DEPTH]
        out.append({turns[i].dia_id: float(row[i]) for i in best})
    return out


def what_if(convs: Sequence[Conversation]) -> dict[str, dict[str, Any]]:
    """Offline fusion what-ifs: BM25 and exact MiniLM channels fused in several ways."""
    from service.memory.recall.query_terms import STOPWORDS

    per_config: dict[str, list[tuple[int, quality.Scores]]] = {name: [] for name in WHAT_IFS}
    for conv in convs:
        index = quality.Bm25Index([(t.dia_id, t.content) for t in conv.turns], STOPWORDS)
        vector = _vector_scores(conv.turns, conv.questions)
        for q, vec in zip(conv.questions, vector, strict=True):
            lex = index.scores(q.text, WHAT_IF_DEPTH)
            for name, fuse in WHAT_IFS.items():
                scored = quality.score(fuse(lex, vec), q.relevant, LIMIT)
                per_config[name].append((q.category, scored))
    return {
        name: {k: dataclasses.asdict(v) for k, v in quality.summarise(rows).items()}
        for name, rows in per_config.items()
    }


# --------------------------------------------------------------------------- storing and asking

QUEUE_TIMEOUT_S = 900.0
PHASE_TIMEOUT_S = 1800.0


@dataclasses.dataclass
class StoreLog:
    latencies_s: list[float] = dataclasses.field(default_factory=list)
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)


def store_args(agent: str, turn: Turn) -> dict[str, Any]:
    """The ``store`` arguments of one turn."""
    message = {"id": turn.dia_id, "content": turn.content, "timestamp": turn.timestamp}
    return {"agent_id": agent, "message": message}


async def _store_conversation(session: ClientSession, conv: Conversation, log: StoreLog) -> None:
    """Store one conversation's turns in order; duplicates map to the stored turn."""
    by_id: dict[int, str] = {}
    for turn in conv.turns:
        reply = await call_json(session, "store", store_args(conv.sample_id, turn))
        log.latencies_s.append(reply.seconds)
        result = "error" if reply.failed else str(reply.body.get("result"))
        log.outcomes[result] += 1
        memory_id = reply.body.get("id")
        if result == "stored" and isinstance(memory_id, int):
            by_id[memory_id] = turn.dia_id
        elif result == "skipped" and memory_id in by_id:
            log.aliases[f"{conv.sample_id}/{turn.dia_id}"] = by_id[memory_id]


async def store_all(
    service: harness.Service, convs: Sequence[Conversation], clients: int
) -> dict[str, Any]:
    """Store every conversation with ``clients`` sessions (one conversation at a time each)."""
    log = StoreLog()
    pending = collections.deque(convs)

    async def worker(session: ClientSession) -> None:
        while pending:
            await _store_conversation(session, pending.popleft(), log)

    started = time.perf_counter()
    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        await asyncio.wait_for(asyncio.gather(*map(worker, sessions)), PHASE_TIMEOUT_S)
        stored_s = time.perf_counter() - started
        drained_s = await wait_queue_empty(sessions[0], QUEUE_TIMEOUT_S)
    return {
        "turns": sum(len(c.turns) for c in convs),
        "outcomes": dict(log.outcomes),
        "aliases": log.aliases,
        "store_seconds": round(stored_s, 1),
        "queue_drain_seconds": round(drained_s, 1),
        "total_seconds": round(stored_s + drained_s, 1),
        "latency": dataclasses.asdict(latency_stats(log.latencies_s, stored_s)),
    }


async def ask_all(
    service: harness.Service,
    questions: Sequence[Question],
    variant: Variant,
    clients: int,
    aliases: dict[str, str],
) -> tuple[list[Answer], float]:
    """Every question as one ``recall``, ``clients`` sessions in parallel; answers and wall."""
    pending = collections.deque(questions)
    answers: list[Answer] = []

    async def worker(session: ClientSession) -> None:
        while pending:
            q = pending.popleft()
            args = {"agent_id": q.sample_id, "query": q.text, "limit": LIMIT, "deep": variant.deep}
            reply = await call_json(session, "recall", args)
            answers.append(answer_of(q, reply.body, reply.seconds, reply.failed, aliases))

    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        started = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*map(worker, sessions)), PHASE_TIMEOUT_S)
        wall = time.perf_counter() - started
    answers.sort(key=lambda a: (a.question.sample_id, a.question.number))
    return answers, wall


def query_variant(
    service: harness.Service,
    convs: Sequence[Conversation],
    variant: Variant,
    args: argparse.Namespace,
    aliases: dict[str, str],
) -> dict[str, Any]:
    """Ask every question under ``variant`` on a running service; the variant's result."""
    print(f"  {variant.name}: {len(questions_of(convs))} recalls ...", file=sys.stderr)
    answers, wall = asyncio.run(
        ask_all(service, questions_of(convs), variant, args.clients, aliases)
    )
    result: dict[str, Any] = {"name": variant.name, "env": variant.env, "deep": variant.deep}
    result.update(evaluate(answers, wall))
    if args.per_question is not None:
        result["per_question"] = per_question(answers)
    overall = result["metrics"]["overall"]
    print(f"    NDCG@10 {overall['ndcg']:.3f}, wall {wall:.0f} s", file=sys.stderr)
    return result


def run_mode(mode: str, convs: Sequence[Conversation], args: argparse.Namespace) -> dict[str, Any]:
    """Store everything under ``mode``, then query every variant (restarting as needed)."""
    base = {"CPERSONA_EMBEDDING_MODE": mode, **dict(args.env)}
    variants = variants_for(mode, args.tune, args.variant)
    out: dict[str, Any] = {"mode": mode, "service_env": base, "variants": []}
    with harness.fresh_tenant(args.code, "locomo", base, keep=args.keep_data) as (data_dir, key):
        with harness.serve_on(args.code, data_dir, key, base) as service:
            print(
                f"mode {mode}: storing {sum(len(c.turns) for c in convs)} turns ...",
                file=sys.stderr,
            )
            out["store"] = asyncio.run(store_all(service, convs, args.clients))
            print(f"  stored in {out['store']['total_seconds']} s", file=sys.stderr)
            aliases = out["store"]["aliases"]
            for variant in (v for v in variants if not v.env):
                out["variants"].append(query_variant(service, convs, variant, args, aliases))
        for variant in (v for v in variants if v.env):
            with harness.serve_on(args.code, data_dir, key, {**base, **variant.env}) as service:
                out["variants"].append(query_variant(service, convs, variant, args, aliases))
    return out


# --------------------------------------------------------------------------- Markdown

METRIC_GROUPS = (*quality.CATEGORY_NAMES.values(), "overall", "macro")


def _cells(summary: dict[str, Any] | None) -> list[str]:
    if summary is None:
        return ["n/a"] * 3
    return [f"{summary[name]:.3f}" for name in ("ndcg", "recall", "hit")]


def quality_table(results: dict[str, Any], variant: str) -> list[str]:
    """Per category and overall/macro: NDCG@10, Recall@10, hit@10 for each mode."""
    modes = [
        (m["mode"], next((v for v in m["variants"] if v["name"] == variant), None))
        for m in results["modes"]
    ]
    columns = ["Category", "n"]
    for mode, _ in modes:
        columns += [f"{mode} NDCG@10", f"{mode} R@10", f"{mode} hit@10"]
    rows = []
    for group in METRIC_GROUPS:
        count = next(
            (v["metrics"][group]["count"] for _, v in modes if v and group in v["metrics"]), 0
        )
        cells = [c for _, v in modes for c in _cells(v["metrics"].get(group) if v else None)]
        rows.append([group, count, *cells])
    return table(columns, "lr" + "rrr" * len(modes), rows)


def _settings(variant: dict[str, Any]) -> str:
    """A variant's service settings without the ``CPERSONA_`` prefix, plus ``deep``."""
    settings = ", ".join(f"{k.removeprefix('CPERSONA_')}={x}" for k, x in variant["env"].items())
    return (settings + (", deep" if variant["deep"] else "")).strip(", ") or "defaults"


def _tuning_rows(results: dict[str, Any]) -> Iterator[list[object]]:
    for m in results["modes"]:
        for v in m["variants"]:
            o, mac = v["metrics"]["overall"], v["metrics"]["macro"]
            d, lat = v["diagnostics"], v["latency"]
            yield [
                m["mode"],
                v["name"],
                _settings(v),
                *(f"{x:.3f}" for x in (o["ndcg"], mac["ndcg"], o["recall"], o["hit"])),
                d["fewer_than_10_rows"],
                d["zero_rows"],
                d["mean_rows"],
                f"{d['rows_with_cosine_share']:.2f}",
                f"{d['relevant_rows_with_cosine']}/{d['relevant_rows']}",
                f"{lat['p50_ms']:.1f}",
                f"{lat['p95_ms']:.1f}",
            ]


def tuning_table(results: dict[str, Any]) -> list[str]:
    """One row per (mode, variant): overall quality, row counts, latency."""
    columns = [
        *("Mode", "Variant", "Settings", "NDCG@10", "macro NDCG", "R@10", "hit@10"),
        *("<10 rows", "0 rows", "mean rows", "rows w/ cosine", "rel. rows w/ cosine"),
        *("p50 ms", "p95 ms"),
    ]
    return table(columns, "lll" + "r" * 11, _tuning_rows(results))


def store_table(results: dict[str, Any]) -> list[str]:
    """Per mode: store outcomes, store and queue-drain time, store latency."""
    columns = [
        *("Mode", "Turns", "Outcomes", "Store s", "Queue drain s", "Total s"),
        *("Store p50 ms", "Store p95 ms"),
    ]
    rows = [
        [
            m["mode"],
            s["turns"],
            outcomes(s["outcomes"]),
            s["store_seconds"],
            s["queue_drain_seconds"],
            s["total_seconds"],
            f"{s['latency']['p50_ms']:.1f}",
            f"{s['latency']['p95_ms']:.1f}",
        ]
        for m in results["modes"]
        for s in [m["store"]]
    ]
    return table(columns, "lrlrrrrr", rows)


def what_if_table(results: dict[str, Any]) -> list[str]:
    """The offline fusion what-ifs (none when they did not run)."""
    what_ifs = results.get("what_if", {})
    columns = [
        "Offline fusion (BM25 + exact MiniLM, not the service)",
        *("NDCG@10", "macro NDCG", "R@10", "hit@10"),
    ]
    rows = [
        [name, *(f"{x:.3f}" for x in (o["ndcg"], mac["ndcg"], o["recall"], o["hit"]))]
        for name, summary in what_ifs.items()
        for o, mac in [(summary["overall"], summary["macro"])]
    ]
    return table(columns, "lrrrr", rows) if rows else []


def service_sections(results: dict[str, Any]) -> list[str]:
    """The tables of the service runs (none when only the what-ifs ran)."""
    if not results["modes"]:
        return []
    return [
        "Default settings:",
        "",
        *quality_table(results, "default"),
        "",
        "`deep: true` (diagnostic):",
        "",
        *quality_table(results, "deep"),
        "",
        *tuning_table(results),
        "",
        *store_table(results),
        "",
    ]


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    m, o = results["machine"], results["options"]
    bm25 = results["offline_bm25"]
    lines = [
        f"{machine_line(m)}. {o['conversations']} conversations, {o['turns']}"
        f" turns, {o['questions']} questions, {o['clients']} clients. Service code snapshot"
        f" {results['code']}.",
        "",
        *service_sections(results),
        f"Offline BM25 on the same corpus/questions (k1 1.2, b 0.75, service stopwords):"
        f" NDCG@10 {bm25['overall']['ndcg']:.3f}, macro {bm25['macro']['ndcg']:.3f}.",
        "",
        *what_if_table(results),
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- CLI

DEFAULT_OUT = Path("bench/results/locomo.json")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Load the data, run every mode (and the what-ifs); the JSON-ready results."""
    convs = load(args.data, args.conversations, args.questions)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {
            "data": str(args.data),
            "conversations": len(convs),
            "turns": sum(len(c.turns) for c in convs),
            "questions": len(questions_of(convs)),
            "clients": args.clients,
            "limit": LIMIT,
            "tune": args.tune,
        },
        "code": args.code_id,
        "offline_bm25": {k: dataclasses.asdict(v) for k, v in offline_bm25(convs).items()},
        "modes": [],
    }
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        results["modes"].append(run_mode(mode, convs, args))
    if args.what_if:
        print("offline fusion what-ifs ...", file=sys.stderr)
        results["what_if"] = what_if(convs)
    record_end(results, started)
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options of ``python -m bench.locomo``."""
    parser = argparse.ArgumentParser(prog="python -m bench.locomo", description=__doc__)
    add = parser.add_argument
    add("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (default: %(default)s)")
    add("--modes", default="none,local", help="embedding modes (default: %(default)s)")
    add("--conversations", type=int, help="only the first N conversations")
    add("--questions", type=int, help="at most N questions per conversation")
    add("--clients", type=int, default=4, help="concurrent MCP sessions (default: %(default)s)")
    add("--tune", action="store_true", help="also run the tuning variants (local mode)")
    add("--what-if", action="store_true", help="also run the offline fusion what-ifs")
    add("--variant", action="append", default=[], help="run only this variant (repeatable)")
    add("--env", type=env_pair, action="append", default=[], help="service setting NAME=VALUE")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    add("--per-question", type=Path, help="also write each question's ranking here")
    add("--keep-data", action="store_true", help="keep the temporary data directories")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 32:
        parser.error("--clients takes 1..32")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write JSON and Markdown."""
    args = parse_args(argv)
    results = run_on_snapshot(args, run, import_here=True)
    if args.per_question is not None:
        detail = {
            f"{m['mode']}/{v['name']}": v.pop("per_question")
            for m in results["modes"]
            for v in m["variants"]
        }
        write_json(args.per_question, detail)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
