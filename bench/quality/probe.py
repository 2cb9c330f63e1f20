"""The LoCoMo benchmark against the running service: store every turn, ask every question.

One agent per conversation (``agent_id`` = ``sample_id``); every turn one ``store``
(``message.id`` = its dia_id, ``message.timestamp`` = the session's date); every
question one ``recall`` (``limit: 10``). With ``local`` embeddings the store phase
waits for ``get_queue_status.pending == 0`` before any question is asked.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import sys
import time
from collections.abc import Sequence
from typing import Any

from mcp.client.session import ClientSession

from bench.corpora.locomo import LIMIT, Conversation, Question, Turn, questions_of
from bench.harness import serving as harness
from bench.harness.client import call_json, drain_timeout_s, mcp_sessions, wait_queue_empty
from bench.harness.stats import latency_stats
from bench.quality.metrics import Answer, answer_of, evaluate, per_question
from bench.quality.variants import Variant, variants_for

DEEP_LIMIT = 50
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
        turns = sum(len(c.turns) for c in convs)
        drained_s = await wait_queue_empty(sessions[0], drain_timeout_s(turns, QUEUE_TIMEOUT_S))
    return {
        "turns": turns,
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
    deeper: bool = False,
) -> tuple[list[Answer], float]:
    """Every question as one ``recall``, ``clients`` sessions in parallel; answers and wall.

    With ``deeper`` each question is asked a second time with ``limit: 50`` (untimed), for
    Recall@50."""
    pending = collections.deque(questions)
    answers: list[Answer] = []

    async def worker(session: ClientSession) -> None:
        while pending:
            q = pending.popleft()
            args = {"agent_id": q.sample_id, "query": q.text, "limit": LIMIT, "deep": variant.deep}
            reply = await call_json(session, "recall", args)
            answer = answer_of(q, reply.body, reply.seconds, reply.failed, aliases)
            if deeper:
                wide = await call_json(session, "recall", {**args, "limit": DEEP_LIMIT})
                ranked = answer_of(q, wide.body, wide.seconds, wide.failed, aliases).ranked
                answer = dataclasses.replace(answer, deeper=ranked)
            answers.append(answer)

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
        ask_all(service, questions_of(convs), variant, args.clients, aliases, args.r50)
    )
    result: dict[str, Any] = {"name": variant.name, "env": variant.env, "deep": variant.deep}
    result.update(evaluate(answers, wall, args.sharing))
    if args.per_question is not None:
        result["per_question"] = per_question(answers)
    overall = result["metrics"]["overall"]
    print(f"    NDCG@10 {overall['ndcg']:.3f}, wall {wall:.0f} s", file=sys.stderr)
    return result


def run_mode(mode: str, convs: Sequence[Conversation], args: argparse.Namespace) -> dict[str, Any]:
    """Store everything under ``mode``, then query every variant (restarting as needed)."""
    base = {"CPERSONA_EMBEDDING_MODE": mode, **dict(args.env)}
    variants = variants_for(mode, args.tune, args.variant, args.alternatives)
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
