"""Token economy of the recall preview tier, measured through the real MCP/HTTP path.

``python -m bench.economy.run [--quick] [--modes local,none] [--out PATH]``

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
conversation), each measured these ways from the client's side:

- ``previews``: ``recall(limit=10)``, the default shape (500-character previews);
- ``full_content``: ``recall(limit=10, full_content=true)``;
- ``previews+get_contents(2)``: the same preview response plus one ``get_contents`` of
  the refs of its last two ref-carrying rows (recall answers best-last);
- ``max_tokens``: ``recall(limit=10, max_tokens=500)`` followed through every cursor;
- sessions: the questions of each conversation again, five to a session
  (``X-CPersona-Session``) with ``novel_only: true``.

``--baseline REF`` (default ``main``) runs the same corpus and questions against the code
of that git ref too, in the same run, for the before/after table (the budget and session
probes need the new parameters and run on the current code only).

Sizes are the tool result text (the JSON the model reads) in characters, UTF-8 bytes and
estimated tokens (see :data:`ESTIMATOR_NOTES`; chars/4 is the primary one). The
relevance-judgement proxy asks whether the evidence turn lies inside the 500-character
preview of the row that holds it. The data set (CC BY-NC 4.0) is read from
``../shared/data/locomo/locomo10.json`` and never copied: results hold only ids and numbers.

The parts: :mod:`bench.economy.corpus` (the chunked corpus), :mod:`bench.economy.estimates`
(size measures), :mod:`bench.economy.probe` (storing and probing through the service),
:mod:`bench.economy.tally` (what each mode measured), :mod:`bench.economy.judges` (the
relevance proxies), :mod:`bench.economy.report` (Markdown).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import tarfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import DEFAULT_DATA
from bench.economy.corpus import (
    PREVIEW_CHARS,
    Placement,
    build_corpus,
    length_distribution,
    load,
    sample_questions,
)
from bench.economy.estimates import ESTIMATOR_NOTES, estimators
from bench.economy.judges import FETCH_TOP, static_proxy
from bench.economy.probe import LIMIT, run_mode
from bench.economy.report import markdown
from bench.economy.tally import Context, corpus_sheds
from bench.harness.cli import write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.serving import REPO_ROOT, BenchError, scratch_dir
from bench.harness.snapshot import code_fingerprint, run_on_snapshot

DEFAULT_OUT = Path("bench/results/token_economy.json")
PASSAGES_OFF = "passages-off"
"""``--baseline`` value: the before is this code with CPERSONA_PASSAGES=false (issue 34)."""
FULL = {"conversations": 10, "questions": 0, "max_seconds": 300.0}
QUICK = {"conversations": 2, "questions": 25, "max_seconds": 60.0}


@contextlib.contextmanager
def baseline_code(ref: str | None) -> Iterator[Path | None]:
    """The service code of git ``ref`` (``service/``, ``alembic/``) in a scratch directory."""
    if ref is None:
        yield None
        return
    with scratch_dir() as root:
        archive = root / "baseline.tar"
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", "-o", str(archive), ref,
             "service", "alembic", "alembic.ini"],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise BenchError(f"git archive {ref} failed: {done.stderr.strip()}")
        code = root / "code"
        with tarfile.open(archive) as tar:
            tar.extractall(code, filter="data")
        yield code


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the corpus, run every mode (and the baseline's), return the JSON results."""
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
            "baseline": args.baseline,
        },
        "estimators": {k: v for k, v in ESTIMATOR_NOTES.items() if k in measures},
        "corpus": length_distribution(everything),
        "corpus_row_shed": corpus_sheds(everything, measures),
        "proxy_static": static_proxy(questions, placement, answers),
        "modes": [],
    }
    if args.baseline == PASSAGES_OFF:  # this code, passages off: the same run's before
        results["baseline"] = {"ref": PASSAGES_OFF, "code": args.code_id}
        results["baseline_modes"] = [
            run_mode(
                mode, corpus, questions, ctx, args, code=args.code, features=False,
                settings={"CPERSONA_PASSAGES": "false"},
            )
            for mode in args.modes
        ]  # fmt: skip
    with baseline_code(None if args.baseline == PASSAGES_OFF else args.baseline) as before:
        if before is not None:
            results["baseline"] = {"ref": args.baseline, "code": code_fingerprint(before)}
            results["baseline_modes"] = [
                run_mode(mode, corpus, questions, ctx, args, code=before, features=False)
                for mode in args.modes
            ]
        for mode in args.modes:
            results["modes"].append(
                run_mode(mode, corpus, questions, ctx, args, code=args.code, features=True)
            )
    record_end(results, started)
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Options; unset sizes take the --quick or full defaults."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.economy.run",
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
    add(
        "--baseline",
        default="main",
        help="git ref to measure in the same run for before/after ('none': skip; "
        f"'{PASSAGES_OFF}': this code with CPERSONA_PASSAGES=false; default: %(default)s)",
    )
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
    args.baseline = None if args.baseline in ("", "none") else args.baseline
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write JSON and Markdown."""
    args = parse_args(argv)
    results = run_on_snapshot(args, run)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
