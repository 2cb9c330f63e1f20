"""The recall-latency scenarios: load a corpus, inspect the recall plan, measure latency.

Tiers: 1k, 10k and 100k memories in ONE agent (loaded one after another into the same
database, each into its own agent, so the table holds 1.1k, 11.1k, 111.1k rows when the
tier is measured), and 1M memories spread over 1,000 agents in 100 tenants (a fresh
database). After each load the EXPLAIN plans of the recall statements are recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.harness import serving as harness
from bench.latency import corpus as latency_corpus, loader as corpus, passages as long_rows
from bench.latency.embed import embed
from bench.latency.plans import explain_recall, memory_rows, vector_channel_check
from bench.latency.probe import LOCAL, Target, Tree, latency_runs, queries_needed
from bench.latency.queries import common_word_queries, corpus_like_vectors, query_texts

TIERS = {"1k": 1_000, "3k": 3_000, "10k": 10_000, "100k": 100_000}
"""Rows of the single-agent tiers (3k: a small deployment, where the planner's choice between
HNSW and an exact scan depends on the planner settings; not in the default run)."""
REBUILD_FROM_ROWS = 50_000
INSPECT_QUERIES = 40


@contextlib.contextmanager
def embedded_postgres(data_dir: Path) -> Iterator[str]:
    """Hold the data directory's embedded Postgres for the loader; yield its URL.

    While this process holds it, CLI and ``serve`` processes reattach and leave it
    running when they exit; it stops when the block ends.
    """
    from service.db.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(data_dir)
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


def inspect(
    url: str, slug: str, agents: Sequence[str], seed: int, questions: Sequence[str] = ()
) -> dict[str, Any]:
    """EXPLAIN plans (real query embeddings) and the vector-channel check for one tenant's
    agents. The check's query vectors are the embedded ``questions`` when given (a corpus
    of real vectors: LoCoMo's questions), else drawn from the synthetic corpus's own
    distribution (random vectors are only comparable with each other)."""
    texts = list(questions[:INSPECT_QUERIES]) or query_texts(INSPECT_QUERIES, seed + 7)
    real = list(zip(texts, asyncio.run(embed(texts)), strict=True))
    drawn = corpus_like_vectors(len(texts), seed)
    like = real if questions else list(zip(texts, drawn, strict=True))
    return {
        "explain": asyncio.run(explain_recall(url, slug, agents[0], real[:10])),
        "vector_channel": asyncio.run(vector_channel_check(url, slug, agents, like)),
    }


def _inspect_questions(args: argparse.Namespace) -> list[str]:
    """The questions the vector check asks of a LoCoMo corpus (none for a synthetic one)."""
    return list(latency_corpus.questions(args.data)) if args.corpus == "locomo" else []


def _versions(args: argparse.Namespace) -> list[tuple[str, Path, str]]:
    """(name, code snapshot, fingerprint) of every version measured: this checkout, and
    the ``--compare`` checkout when given."""
    versions = [("this", args.code, args.code_id)]
    if args.compare_code is not None:
        versions.append(("compare", args.compare_code, args.compare_code_id))
    if getattr(args, "passages_off", False):
        versions.append(("compare", args.code, args.code_id))
    return versions


PASSAGES_OFF = {"CPERSONA_PASSAGES": "false"}


def _query_texts(args: argparse.Namespace, count: int, seed: int) -> list[str]:
    """Unique query texts: LoCoMo's questions with the LoCoMo corpus, else synthetic;
    with ``--query-set common-words``, three of the corpus's most widespread words."""
    if args.query_set == "common-words":
        from service.memory.recall.query_terms import word_lexeme

        texts = latency_corpus.turns(args.data) if args.corpus == "locomo" else ()
        return common_word_queries(texts or query_texts(2000, seed), count, seed, word_lexeme)
    if args.corpus == "locomo":
        pool = list(latency_corpus.questions(args.data))
        return [pool[(seed + i) % len(pool)] for i in range(count)]
    return query_texts(count, seed)


def _load(args: argparse.Namespace, url: str, plan: list[corpus.AgentLoad]) -> corpus.LoadReport:
    batches = None
    if args.corpus == "locomo":
        latency_corpus.turn_vectors(args.data)  # embedded once, before the async load
        batches = latency_corpus.batches_from(args.data)
    rebuild = plan[0].rows >= REBUILD_FROM_ROWS
    return asyncio.run(corpus.load(url, plan, rebuild_indexes=rebuild, batches=batches))


def run_single_agent(args: argparse.Namespace) -> list[dict[str, Any]]:
    """1k, 10k, 100k rows in one agent each, loaded in turn into one database per version."""
    tiers = [t for t in args.tiers if t in TIERS]
    results = []
    with contextlib.ExitStack() as stack:
        homes = []
        for name, code, code_id in _versions(args):
            data_dir, key = stack.enter_context(
                harness.fresh_tenant(code, "scale", LOCAL, keep=args.keep_data)
            )
            homes.append(
                (
                    name,
                    code,
                    code_id,
                    data_dir,
                    key,
                    stack.enter_context(embedded_postgres(data_dir)),
                )
            )
        for tier in tiers:
            agent, rows = f"agent-{tier}", TIERS[tier]
            plan = [corpus.AgentLoad("scale", agent, rows)]
            result: dict[str, Any] = {"tier": tier, "agent_rows": rows, "agents": 1, "tenants": 1}
            trees = []
            for name, code, code_id, data_dir, key, url in homes:
                print(f"{tier} ({name}): loading {rows} {args.corpus} rows ...", file=sys.stderr)
                report = _load(args, url, plan)
                result.setdefault("load", dataclasses.asdict(report))
                result.setdefault("table_rows", asyncio.run(memory_rows(url)))
                if getattr(args, "long_share", 0.0) > 0:
                    result["passages"] = long_rows.add(url, agent, args.long_share)
                off = getattr(args, "passages_off", False) and name == "compare"
                env = PASSAGES_OFF if off else {}
                trees.append(Tree(name, code, code_id, data_dir, url, [Target(key, agent)], env))
            result.update(
                inspect(homes[0][5], "scale", [agent], args.seed, _inspect_questions(args))
            )
            texts = _query_texts(args, queries_needed(args), args.seed + rows)
            by_version = latency_runs(trees, args, texts)
            result["runs"] = by_version["this"]
            if "compare" in by_version:
                result["compare_runs"] = by_version["compare"]
            results.append(result)
    return results


def run_spread(args: argparse.Namespace) -> dict[str, Any]:
    """``--spread-rows`` rows over tenants x agents in a fresh database."""
    plans = corpus.spread(args.spread_rows, args.tenants, args.agents_per_tenant)
    result: dict[str, Any] = {
        "tier": f"{args.spread_rows:,} spread",
        "tenants": args.tenants,
        "agents": len(plans),
        "agent_rows": plans[0].rows,
    }
    with harness.scratch_dir(args.keep_data) as data_dir:
        env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=LOCAL))
        harness.run_cli(["migrate"], env, cwd=args.code)
        with embedded_postgres(data_dir) as url:
            print(f"spread: loading {args.spread_rows} rows ...", file=sys.stderr)
            report = asyncio.run(corpus.load(url, plans, rebuild_indexes=True))
            result["load"] = dataclasses.asdict(report)
            result["table_rows"] = asyncio.run(memory_rows(url))
            step = max(1, args.tenants // args.key_tenants)
            slugs = sorted({p.tenant for p in plans})[::step][: args.key_tenants]
            keys = {
                slug: harness.new_key(env, slug, create_tenant=False, cwd=args.code)
                for slug in slugs
            }
            agents = sorted({p.agent for p in plans})
            result.update(inspect(url, slugs[0], agents, args.seed, _inspect_questions(args)))
            targets = [Target(keys[s], a) for a in agents for s in slugs]
            tree = Tree("this", args.code, args.code_id, data_dir, url, targets)
            texts = query_texts(queries_needed(args), args.seed + 1)
            result["runs"] = latency_runs([tree], args, texts)["this"]
    return result
