"""The reconstruct benchmarks' shared parts: the two systems, storing, asking, counting.

Both systems are driven by the same official-SDK MCP client over streamable HTTP
(:mod:`bench.harness.client`), one after the other in the same run:

- **CPersona 2.6.14** from its own virtualenv (:mod:`bench.harness.cpersona`), SQLite,
  embeddings from the service's MiniLM model served by :mod:`bench.harness.embed_server`;
- **the service** (``serve`` from a snapshot of this checkout, embedded Postgres, the
  same model in process: ``CPERSONA_EMBEDDING_MODE=local``).

Every turn is one ``store`` (``message.id`` = the turn id, the timestamp its session's
date), optionally with an ``associations`` rider; the run waits for the embedding queue
to drain, then asks every question under each configuration (:class:`Config`). The
answer's tokens are counted on the text the client receives by one counter for both
systems: ``cl100k_base``, the count CPersona itself uses for ``used_tokens``
(``cpersona.tokens.count``, run in CPersona's virtualenv: :func:`count_tokens`).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mcp.client.session import ClientSession

from bench.corpora.locomo import Conversation, Question, Turn
from bench.harness import cpersona, serving as harness
from bench.harness.cli import run_or_exit
from bench.harness.client import call_json, drain_timeout_s, mcp_sessions, wait_queue_empty
from bench.harness.snapshot import code_fingerprint, run_on_snapshot
from bench.harness.stats import latency_stats

LOCAL = {"CPERSONA_EMBEDDING_MODE": "local"}
QUEUE_TIMEOUT_S = 1200.0
PHASE_TIMEOUT_S = 3600.0
TOKEN_TIMEOUT_S = 600.0
GIT_TIMEOUT_S = 120.0
T = TypeVar("T")
Rider = Callable[[str, Turn], dict[str, Any] | None]
"""The ``associations`` rider of one turn of an agent (None: store it bare)."""


@dataclasses.dataclass(frozen=True)
class Config:
    """One way of asking: a tool and the arguments added to ``agent_id`` and ``query``."""

    name: str
    tool: str
    extra: Mapping[str, Any]


RECALL10 = Config("recall@10", "recall", {"limit": 10})
RECONSTRUCT = Config("reconstruct", "reconstruct", {})
RECONSTRUCT_LITE = Config("reconstruct lite", "reconstruct", {"mode": "lite"})


@dataclasses.dataclass(frozen=True)
class Reply:
    """One answer: its question, configuration, text (as received), body, latency, failure."""

    question: Question
    config: str
    agent: str
    text: str
    body: Mapping[str, Any]
    seconds: float
    failed: bool


# --------------------------------------------------------------------------- systems


@contextlib.contextmanager
def cpersona_service(venv: Path, keep: bool) -> Iterator[harness.Service]:
    """CPersona 2.6.14 on a fresh SQLite file, its embedder beside it, until the block ends."""
    script = cpersona.ensure_venv(venv)
    with contextlib.ExitStack() as stack:
        embed_url = stack.enter_context(cpersona.embedder())
        data_dir = stack.enter_context(harness.scratch_dir(keep))
        yield stack.enter_context(cpersona.serving(script, data_dir, embed_url))


@contextlib.contextmanager
def our_service(code: Path, slug: str, keep: bool) -> Iterator[harness.Service]:
    """The service from the snapshot ``code`` with a fresh tenant, local embeddings."""
    with contextlib.ExitStack() as stack:
        data_dir, key = stack.enter_context(harness.fresh_tenant(code, slug, LOCAL, keep=keep))
        yield stack.enter_context(harness.serve_on(code, data_dir, key, LOCAL))


def snapshot_ref(dest: Path, ref: str, root: Path = harness.REPO_ROOT) -> tuple[Path, str]:
    """``service/``, ``alembic/`` and ``alembic.ini`` of the commit ``ref`` of the repository
    at ``root``, extracted into ``dest/code``; that directory and the full commit id."""

    def git(*argv: str) -> bytes:
        done = subprocess.run(
            ["git", "-C", str(root), *argv], capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            raise harness.BenchError(f"git {argv[0]} {ref}: {done.stderr.decode().strip()[-200:]}")
        return done.stdout

    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}").decode().strip()
    code = dest / "code"
    code.mkdir(parents=True)
    tar = git("archive", "--format=tar", commit, "service", "alembic", "alembic.ini")
    subprocess.run(["tar", "-x", "-C", str(code)], input=tar, check=True, timeout=GIT_TIMEOUT_S)
    return code, commit


SYSTEMS = ("cpersona", "service")


def add_run_options(parser: argparse.ArgumentParser, default_out: Path) -> None:
    """The options every side-by-side command takes: the systems and their order, the
    concurrent sessions, CPersona's virtualenv, the results file, the data directories,
    and the service's git ref (checked by :func:`check_run_options`)."""
    add = parser.add_argument
    add("--systems", default="cpersona,service", help="systems, in order (default: %(default)s)")
    add("--clients", type=int, default=4, help="concurrent MCP sessions (default: %(default)s)")
    add("--venv", type=Path, default=cpersona.DEFAULT_VENV, help="CPersona's virtualenv")
    add("--out", type=Path, default=default_out, help="JSON results (default: %(default)s)")
    add("--keep-data", action="store_true", help="keep the temporary data directories")
    add("--service-ref", help="run the service of this git commit or branch (default: checkout)")


def check_run_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--systems`` as a list of known names, ``--clients`` within 1..16 (else the
    parser's usage error)."""
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not args.systems or set(args.systems) - set(SYSTEMS):
        parser.error(f"--systems takes {', '.join(SYSTEMS)}")
    if not 1 <= args.clients <= 16:
        parser.error("--clients takes 1..16")


def run_snapshotted(args: Any, run: Callable[[Any], T]) -> T:
    """``run(args)`` on one copy of the service's code: this checkout's working tree, or the
    commit ``args.service_ref`` (a branch not merged yet, e.g. to measure a tool before it
    lands); ``args.code`` is the copy and ``args.code_id`` its fingerprint (and commit)."""
    if args.service_ref is None:
        return run_on_snapshot(args, run)
    with harness.scratch_dir() as root:
        args.code, commit = snapshot_ref(root, args.service_ref)
        args.code_id = f"{code_fingerprint(args.code)} ({args.service_ref} {commit[:12]})"
        return run_or_exit(lambda: run(args))


# --------------------------------------------------------------------------- storing


@dataclasses.dataclass
class Stored:
    """What storing produced: per agent, each record ref → the turn ids stored as it."""

    turns_of: dict[str, dict[str, set[str]]] = dataclasses.field(default_factory=dict)
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    rider_dropped: int = 0
    latencies_s: list[float] = dataclasses.field(default_factory=list)

    def record(self, agent: str, turn: Turn, body: Mapping[str, Any], failed: bool) -> None:
        """Note one store's outcome and the ref its turn lives at (new or the duplicate's)."""
        result = "error" if failed else str(body.get("result"))
        self.outcomes[result] += 1
        memory_id = body.get("id")
        if result in ("stored", "skipped") and isinstance(memory_id, int):
            self.turns_of.setdefault(agent, {}).setdefault(f"mem:{memory_id}", set()).add(
                turn.dia_id
            )
        riders = body.get("associations")
        if isinstance(riders, dict) and isinstance(riders.get("dropped"), list):
            self.rider_dropped += len(riders["dropped"])


def store_args(agent: str, turn: Turn, rider: Rider | None) -> dict[str, Any]:
    """The ``store`` arguments of one turn (with its rider when one is given)."""
    message = {"id": turn.dia_id, "content": turn.content, "timestamp": turn.timestamp}
    args: dict[str, Any] = {"agent_id": agent, "message": message}
    associations = rider(agent, turn) if rider is not None else None
    if associations:
        args["associations"] = associations
    return args


async def store_all(
    service: harness.Service,
    jobs: Sequence[tuple[str, Turn, Rider | None]],
    clients: int,
    stored: Stored,
) -> dict[str, Any]:
    """Store every ``(agent, turn, rider)`` with ``clients`` sessions; wait for the queue."""
    pending = collections.deque(jobs)

    async def worker(session: ClientSession) -> None:
        while pending:
            agent, turn, rider = pending.popleft()
            reply = await call_json(session, "store", store_args(agent, turn, rider))
            stored.latencies_s.append(reply.seconds)
            stored.record(agent, turn, reply.body, reply.failed)

    started = time.perf_counter()
    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        await asyncio.wait_for(asyncio.gather(*map(worker, sessions)), PHASE_TIMEOUT_S)
        stored_s = time.perf_counter() - started
        timeout_s = drain_timeout_s(len(jobs), QUEUE_TIMEOUT_S)
        drained_s = await wait_queue_empty(sessions[0], timeout_s)
    return {
        "stores": len(jobs),
        "outcomes": dict(stored.outcomes),
        "rider_dropped_items": stored.rider_dropped,
        "store_seconds": round(stored_s, 1),
        "queue_drain_seconds": round(drained_s, 1),
        "latency": dataclasses.asdict(latency_stats(stored.latencies_s, stored_s)),
    }


def jobs_of(
    convs: Sequence[Conversation], agent_of: Callable[[Conversation], str], rider: Rider | None
) -> list[tuple[str, Turn, Rider | None]]:
    """Every turn of ``convs`` as a store job for the agent ``agent_of(conversation)``."""
    return [(agent_of(c), t, rider) for c in convs for t in c.turns]


# --------------------------------------------------------------------------- asking


async def ask_all(
    service: harness.Service,
    asks: Sequence[tuple[str, Question]],
    configs: Sequence[Config],
    clients: int,
) -> list[Reply]:
    """Every ``(agent, question)`` under every configuration, ``clients`` sessions at once."""
    pending = collections.deque((a, q, c) for a, q in asks for c in configs)
    replies: list[Reply] = []

    async def worker(session: ClientSession) -> None:
        while pending:
            agent, q, config = pending.popleft()
            args = {"agent_id": agent, "query": q.text, **config.extra}
            got = await call_json(session, config.tool, args)
            replies.append(
                Reply(q, config.name, agent, got.text, got.body, got.seconds, got.failed)
            )

    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        await asyncio.wait_for(asyncio.gather(*map(worker, sessions)), PHASE_TIMEOUT_S)
    replies.sort(key=lambda r: (r.agent, r.question.sample_id, r.question.number, r.config))
    return replies


# --------------------------------------------------------------------------- tokens

_COUNT_SCRIPT = (
    "import json, sys\n"
    "from cpersona.tokens import count\n"
    "print(json.dumps([count(t) for t in json.load(sys.stdin)]))\n"
)


def count_tokens(texts: Sequence[str], venv: Path) -> list[int]:
    """``cl100k_base`` tokens of each text, by CPersona's own counter in its virtualenv."""
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _COUNT_SCRIPT],
        input=json.dumps(list(texts)),
        capture_output=True,
        text=True,
        timeout=TOKEN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise harness.BenchError(f"token count failed: {done.stderr.strip()[-300:]}")
    counts: list[int] = json.loads(done.stdout)
    return counts


def progress(message: str) -> None:
    """One progress line on stderr."""
    print(message, file=sys.stderr, flush=True)
