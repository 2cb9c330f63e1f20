"""The token-economy benchmark against the running service: store, then probe each question.

Each question is measured three ways from the client's side: ``recall(limit=10)``
(previews), ``recall(limit=10, full_content=true)``, and the previews plus one
``get_contents`` of the refs of the last two ref-carrying rows (recall answers
best-last). Sizes are those of the tool result text, the JSON the model reads.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from bench.corpora.locomo import Question
from bench.economy.corpus import PREVIEW_CHARS, Memory
from bench.economy.estimates import add_sizes, measure
from bench.economy.features import record_answer
from bench.economy.judges import FETCH_TOP, evidence_in_response, judge
from bench.economy.paging import budget_probe, session_probe, sessions_of
from bench.economy.tally import Context, Tally, check_integrity, record, row_sheds, summarise
from bench.harness import serving as harness
from bench.harness.client import Reply, call_json, mcp_session, mcp_sessions, wait_queue_empty

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


async def probe(
    session: ClientSession, q: Question, ctx: Context, tally: Tally, features: bool
) -> None:
    """Measure one question in every way and fold the results into ``tally``; with
    ``features`` (code that has them) also its ``max_tokens`` pages."""
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
    record_answer(tally.features, preview.text, rows)
    with_fetch = sizes["previews+get_contents_trimmed"]["tokens_chars4"]
    tally.features.default_tokens[(q.sample_id, q.number)] = (base["tokens_chars4"], with_fetch)
    if features:
        await budget_probe(session, q, rows, tally.features)


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
    args: argparse.Namespace,
    features: bool,
) -> tuple[Tally, float]:
    """Probe every question with ``args.clients`` sessions; stop taking new ones at the
    deadline."""
    clients, max_seconds = args.clients, args.max_seconds
    pending = collections.deque(questions)
    tally = Tally()
    deadline = time.perf_counter() + max_seconds

    async def worker(session: ClientSession) -> None:
        while pending and time.perf_counter() < deadline:
            await probe(session, pending.popleft(), ctx, tally, features)

    started = time.perf_counter()
    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        await asyncio.wait_for(asyncio.gather(*map(worker, sessions)), max_seconds + 120.0)
    tally.counts["not_run_time_limit"] = len(pending)
    if features:
        await sessions_all(service, questions, tally, clients, deadline + max_seconds)
    return tally, time.perf_counter() - started


async def sessions_all(
    service: harness.Service,
    questions: Sequence[Question],
    tally: Tally,
    clients: int,
    deadline: float,
) -> None:
    """Ask the questions again in sessions of five with ``novel_only`` (the ledger)."""
    pending = collections.deque(enumerate(sessions_of(questions)))

    async def worker() -> None:
        while pending and time.perf_counter() < deadline:
            number, asked = pending.popleft()
            name = f"bench-{asked[0].sample_id}-{number}"
            await session_probe(service.mcp_url, service.key, name, asked, tally.features)

    await asyncio.gather(*(worker() for _ in range(clients)))
    tally.features.counts["sessions_not_run_time_limit"] = len(pending)


async def run_service(
    service: harness.Service,
    corpus: Mapping[str, Sequence[Memory]],
    questions: Sequence[Question],
    ctx: Context,
    args: argparse.Namespace,
    features: bool,
) -> dict[str, Any]:
    """Store, drain the embedding queue, then probe every question."""
    async with mcp_session(service.mcp_url, service.key) as session:
        stored = await store_corpus(session, corpus, time.perf_counter() + args.max_seconds)
    print(
        f"  stored in {stored['store_seconds']} s (+{stored['queue_drain_seconds']} s queue);"
        f" {len(questions)} questions x 3 ...",
        file=sys.stderr,
    )
    tally, wall = await query_all(service, questions, ctx, args, features)
    return {"store": stored, "query_seconds": round(wall, 1), **summarise(tally)}


def run_mode(
    mode: str,
    corpus: Mapping[str, Sequence[Memory]],
    questions: Sequence[Question],
    ctx: Context,
    args: argparse.Namespace,
    *,
    code: Path,
    features: bool,
    settings: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A fresh data directory and service (from the code snapshot ``code``) for one
    embedding mode, with ``settings`` besides (e.g. ``CPERSONA_PASSAGES=false``); with
    ``features``, the usage report the service metered too."""
    env_extra = {
        "CPERSONA_EMBEDDING_MODE": mode,
        "CPERSONA_RECALL_PREVIEW_CHARS": str(PREVIEW_CHARS),
        **(settings or {}),
    }
    with harness.fresh_tenant(code, "tokens", env_extra) as (data_dir, key):
        with harness.serve_on(code, data_dir, key, env_extra) as service:
            print(
                f"mode {mode} ({code}): storing {sum(map(len, corpus.values()))} memories ...",
                file=sys.stderr,
            )
            result = asyncio.run(run_service(service, corpus, questions, ctx, args, features))
        if features:
            env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=env_extra))
            usage = harness.run_cli(["usage", "--tenant", "tokens", "--days", "2"], env, cwd=code)
            result["usage_report"] = usage.splitlines()
    return {"mode": mode, "service_env": env_extra, **result}
