"""LoCoMo retrieval quality of ``recall`` through the real MCP/HTTP path.

``python -m bench.quality.locomo [--modes none,local] [--tune] [--conversations N] [--questions N]``

Protocol (docs/benchmarks/quality.md): one agent per conversation (``agent_id`` =
``sample_id``); every turn stored with ``store`` as one memory (``message.id`` = its
dia_id, content ``"<speaker>: <text>"`` plus the photo caption, ``message.timestamp`` =
the session's date); every question with evidence is one ``recall`` (``limit: 10``),
its rows reversed (recall answers best-last) and mapped back to dia_ids through the
row's ``id``. Metrics come from :mod:`bench.quality.scoring`. With ``local`` embeddings the
run waits for ``get_queue_status.pending == 0`` before querying. ``--tune`` restarts
the service on the same data with each variant's settings and queries again.

The data set (CC BY-NC 4.0, arXiv:2402.17753) is read from
``../shared/data/locomo/locomo10.json`` (``--data``); it is never copied, and the
results hold only ids, categories and numbers.

The parts: :mod:`bench.corpora.locomo` (turns and questions), :mod:`bench.quality.variants`
(query configurations), :mod:`bench.quality.probe` (storing and asking through the
service), :mod:`bench.quality.metrics` (scores), :mod:`bench.quality.offline` (BM25 and
fusion what-ifs), :mod:`bench.quality.report` (Markdown).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import DEFAULT_DATA, LIMIT, Conversation, load, pooled, questions_of
from bench.harness.cli import env_pair, write_json, write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.snapshot import run_on_snapshot
from bench.quality.metrics import sharing_counts
from bench.quality.offline import offline_bm25, what_if
from bench.quality.probe import run_mode
from bench.quality.report import markdown

DEFAULT_OUT = Path("bench/results/locomo.json")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Load the data, run every mode (and the what-ifs); the JSON-ready results."""
    convs = args.conversations_given or load(args.data, args.conversations, args.questions)
    return run_on(args, [pooled(convs)] if args.pooled else convs)


def run_on(args: argparse.Namespace, convs: Sequence[Conversation]) -> dict[str, Any]:
    """Every mode (and the what-ifs) on ``convs``: LoCoMo, or the held-out benchmark."""
    from service.memory.recall.query_terms import STOPWORDS

    args.sharing = sharing_counts(
        {c.sample_id: [t.content for t in c.turns] for c in convs}, questions_of(convs), STOPWORDS
    )
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
            "recall50": args.r50,
            "data_name": args.data_name,
            "pooled": args.pooled,
        },
        "code": args.code_id,
        "offline_bm25": {k: dataclasses.asdict(v) for k, v in offline_bm25(convs).items()},
        "offline_bm25_stemmed": {
            k: dataclasses.asdict(v) for k, v in offline_bm25(convs, stemmed=True).items()
        },
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
    """Options of ``python -m bench.quality.locomo``."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality.locomo", description=__doc__)
    add_options(parser)
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 32:
        parser.error("--clients takes 1..32")
    args.conversations_given = None
    args.data_name = "LoCoMo"
    return args


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options this benchmark shares with the held-out one (``bench.quality.heldout``)."""
    add = parser.add_argument
    add("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (default: %(default)s)")
    add("--modes", default="none,local", help="embedding modes (default: %(default)s)")
    add("--conversations", type=int, help="only the first N conversations")
    add("--questions", type=int, help="at most N questions per conversation")
    add("--clients", type=int, default=4, help="concurrent MCP sessions (default: %(default)s)")
    add("--tune", action="store_true", help="also run the tuning variants (local mode)")
    add("--what-if", action="store_true", help="also run the offline fusion what-ifs")
    add("--alternatives", action="store_true", help="also run the documented alternatives")
    add("--r50", action="store_true", help="ask each question again with limit 50 (Recall@50)")
    add("--variant", action="append", default=[], help="run only this variant (repeatable)")
    add("--env", type=env_pair, action="append", default=[], help="service setting NAME=VALUE")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    add("--per-question", type=Path, help="also write each question's ranking here")
    add("--keep-data", action="store_true", help="keep the temporary data directories")
    add(
        "--pooled",
        action="store_true",
        help="store every conversation in one agent (the others' turns as distractors)",
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write JSON and Markdown."""
    finish(parse_args(argv))


def finish(args: argparse.Namespace) -> None:
    """Run on a snapshot of the service; write the JSON, Markdown and per-question files."""
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
