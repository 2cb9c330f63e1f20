"""Export/import speed and peak memory on a large agent: ``python -m bench.throughput.portability``.

Starts the real service (``serve`` with embedded Postgres in a fresh directory, or
``--database-url``), bulk-loads N memories (default 100,000) into one agent with a
single ``INSERT ... SELECT generate_series`` (seconds, not the store path), then
measures, each as the user runs it:

- CLI export (``cpersona-service export --output FILE``) and CLI import
  (``cpersona-service import FILE --target-agent ...``): wall time and the peak
  RSS of that process (``wait4``);
- HTTP export (``GET /v1/export``) and HTTP import (``POST /v1/import``, the
  file streamed as the body): wall time and the serve process's RSS before and
  at its peak during the transfer (sampled every 20 ms);
- a re-import of the same file (everything skipped: the idempotent path).

Every import is checked against the source: same row count and the same checksum
over msg_id, content, timestamp, metadata, lock, recall count, created_at (to the
second) and embedding. Embeddings are off in the service so the worker does not
embed the imported rows in the middle of the measurement; ``--embeddings`` puts a
random 384-dimension vector on every row and exports/imports it too.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
import psutil

from bench.harness import markdown, serving as harness
from bench.harness.cli import write_json
from bench.harness.machine import machine_facts

T = TypeVar("T")
DEFAULT_OUT = Path("bench/results/portability.json")
SOURCE = "bench-src"
LOAD = """
WITH agent AS (
    INSERT INTO agents (tenant_id, name) SELECT id, $2 FROM tenants WHERE slug = $1
    RETURNING tenant_id, id
)
INSERT INTO memories (tenant_id, agent_id, msg_id, content, source, timestamp_text,
                      timestamp_at, metadata, created_at, locked, recall_count, embedding)
SELECT agent.tenant_id, agent.id, 'msg-' || g,
       'Benchmark memory ' || g || ': ' || md5(g::text)
           || repeat(' lorem ipsum', 1 + g % 12),
       '{"type": "User", "id": "u1", "name": "Bench"}'::jsonb,
       to_char(timestamp '2026-01-01' + g * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       timestamp '2026-01-01' + g * interval '1 minute',
       jsonb_build_object('n', g, 'tags', jsonb_build_array('bench', g % 10)),
       now() - g * interval '1 second', g % 50 = 0, g % 7,
       CASE WHEN $4 THEN (SELECT array_agg(random() - 0.5 + 0 * i)::vector
                          FROM generate_series(1, 384) AS i WHERE g > 0) END
FROM agent, generate_series(1, $3) AS g
"""
CHECKSUM = """
SELECT count(*) AS rows,
       md5(string_agg(md5(concat_ws('|', m.msg_id, m.content, m.timestamp_text, m.metadata::text,
                                   m.locked, m.recall_count, date_trunc('second', m.created_at),
                                   m.embedding::text)), '' ORDER BY m.msg_id)) AS checksum
FROM memories m JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
JOIN tenants t ON t.id = m.tenant_id
WHERE t.slug = $1 AND a.name = $2
"""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.throughput.portability", description=__doc__
    )
    parser.add_argument("--rows", type=int, default=100_000, help="memories (default 100000)")
    parser.add_argument("--embeddings", action="store_true", help="384-d vector on every row")
    parser.add_argument("--database-url", help="external Postgres (default: embedded)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------- measuring


@dataclasses.dataclass
class Measurement:
    name: str
    rows: int
    seconds: float
    peak_rss_mib: float
    baseline_rss_mib: float | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


def run_measured(args: Sequence[str], env: Mapping[str, str]) -> tuple[float, float, str]:
    """Run ``python -m service ARGS``: (seconds, peak RSS MiB of that process, stdout).

    The peak comes from ``wait4`` on that one child, so earlier commands do not count.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "service", *args],
            env=dict(env),
            cwd=harness.REPO_ROOT,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise harness.BenchError(f"{' '.join(args)} failed: {err.read().decode()[-500:]}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()


class RssSampler:
    """Samples a process's RSS every 20 ms in a thread; ``peak`` in MiB."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.baseline = self.process.memory_info().rss / 2**20
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss / 2**20)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def timed(pid: int, work: Callable[[], Any]) -> tuple[float, RssSampler, Any]:
    with RssSampler(pid) as sampler:
        started = time.perf_counter()
        result = await work()
        seconds = time.perf_counter() - started
    return seconds, sampler, result


# --------------------------------------------------------------------------- steps


async def load(url: str, rows: int, embeddings: bool) -> tuple[float, dict[str, Any]]:
    conn = await asyncpg.connect(url)
    try:
        started = time.perf_counter()
        await conn.execute(LOAD, "bench", SOURCE, rows, embeddings, timeout=3600)
        await conn.execute("ANALYZE memories")
        seconds = time.perf_counter() - started
        return seconds, _row(await conn.fetchrow(CHECKSUM, "bench", SOURCE))
    finally:
        await conn.close()


def _row(record: asyncpg.Record | None) -> dict[str, Any]:
    if record is None:
        raise harness.BenchError("the checksum query returned no row")
    return dict(record)


async def checksum(url: str, agent: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        return _row(await conn.fetchrow(CHECKSUM, "bench", agent, timeout=600))
    finally:
        await conn.close()


async def http_export(service: harness.Service, target: Path, embeddings: bool) -> int:
    headers = {"authorization": f"Bearer {service.key}"}
    query = f"agent_id={SOURCE}&include_embeddings={'true' if embeddings else 'false'}"
    async with (
        httpx.AsyncClient(base_url=service.base_url, timeout=3600) as http,
        http.stream("GET", f"/v1/export?{query}", headers=headers) as response,
    ):
        response.raise_for_status()
        size = 0
        with target.open("wb") as handle:
            async for chunk in response.aiter_raw():
                handle.write(chunk)
                size += len(chunk)
    return size


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            yield chunk


async def http_import(service: harness.Service, path: Path, agent: str) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {service.key}"}
    async with httpx.AsyncClient(base_url=service.base_url, timeout=3600) as http:
        response = await http.post(
            f"/v1/import?target_agent_id={agent}", content=_file_chunks(path), headers=headers
        )
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def database_url(env: Mapping[str, str], given: str | None) -> str:
    return given or harness.run_cli(["db", "url"], env).strip()


def verify(name: str, got: dict[str, Any], source: dict[str, Any]) -> None:
    if got != source:
        raise harness.BenchError(f"{name}: imported rows differ from the source: {got} != {source}")


@dataclasses.dataclass
class Run:
    """What the steps share: the service, CLI environment, files, source checksum."""

    service: harness.Service
    env: dict[str, str]
    url: str
    files: Path
    rows: int
    flags: list[str]
    source: dict[str, Any]
    results: list[Measurement] = dataclasses.field(default_factory=list)


async def exports(run: Run) -> None:
    empty = str(run.files / "empty.jsonl")
    seconds, rss, _ = run_measured(
        ["export", "--tenant", "bench", "--agent", "nobody", "--output", empty], run.env
    )
    run.results.append(Measurement("CLI start-up (export of an empty agent)", 0, seconds, rss))
    seconds, rss, _ = run_measured(
        [
            "export",
            "--tenant",
            "bench",
            "--agent",
            SOURCE,
            "--output",
            str(run.files / "cli.jsonl"),
            *run.flags,
        ],
        run.env,
    )
    size = (run.files / "cli.jsonl").stat().st_size
    run.results.append(Measurement("CLI export", run.rows, seconds, rss, extra={"bytes": size}))
    seconds, sampler, size = await timed(
        run.service.process.pid,
        lambda: http_export(run.service, run.files / "http.jsonl", bool(run.flags)),
    )
    run.results.append(
        Measurement(
            "HTTP GET /v1/export",
            run.rows,
            seconds,
            sampler.peak,
            sampler.baseline,
            {"bytes": size},
        )
    )


async def imports(run: Run) -> None:
    seconds, rss, out = run_measured(
        [
            "import",
            "--tenant",
            "bench",
            str(run.files / "cli.jsonl"),
            "--target-agent",
            "bench-cli",
        ],
        run.env,
    )
    verify("CLI import", await checksum(run.url, "bench-cli"), run.source)
    run.results.append(Measurement("CLI import", run.rows, seconds, rss, extra=json.loads(out)))
    for name in ("HTTP POST /v1/import", "HTTP re-import (all skipped)"):
        seconds, sampler, result = await timed(
            run.service.process.pid,
            lambda: http_import(run.service, run.files / "http.jsonl", "bench-http"),
        )
        verify(name, await checksum(run.url, "bench-http"), run.source)
        run.results.append(
            Measurement(name, run.rows, seconds, sampler.peak, sampler.baseline, result)
        )
    again = run.results[-1].extra
    if again["imported_memories"] != 0 or again["skipped_memories"] != run.rows:
        raise harness.BenchError(f"re-import was not idempotent: {again}")


async def measure(
    service: harness.Service, env: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    url = database_url(env, args.database_url)
    load_s, source = await load(url, args.rows, args.embeddings)
    print(f"loaded {source['rows']} memories in {load_s:.1f} s", file=sys.stderr)
    files = service.data_dir / "bench-files"
    files.mkdir()
    flags = ["--include-embeddings"] if args.embeddings else []
    run = Run(service, {**env, "DATABASE_URL": url}, url, files, args.rows, flags, source)
    await exports(run)
    await imports(run)
    return {
        "rows": args.rows,
        "embeddings": args.embeddings,
        "load_seconds": round(load_s, 2),
        "source_checksum": source["checksum"],
        "results": [summary(m) for m in run.results],
    }


def summary(m: Measurement) -> dict[str, Any]:
    return {
        "name": m.name,
        "rows": m.rows,
        "seconds": round(m.seconds, 2),
        "rows_per_second": round(m.rows_per_second),
        "peak_rss_mib": round(m.peak_rss_mib, 1),
        "baseline_rss_mib": None if m.baseline_rss_mib is None else round(m.baseline_rss_mib, 1),
        "extra": {k: v for k, v in m.extra.items() if k not in ("errors",)},
    }


def table(report: dict[str, Any]) -> str:
    """The measurements as one Markdown table under a line about the corpus."""
    columns = ["step", "seconds", "rows/s", "peak RSS (MiB)", "RSS before (MiB)"]
    rows = [
        [
            r["name"],
            f"{r['seconds']:.1f}",
            f"{r['rows_per_second']:,}",
            f"{r['peak_rss_mib']:.1f}",
            "-" if r["baseline_rss_mib"] is None else f"{r['baseline_rss_mib']:.1f}",
        ]
        for r in report["results"]
    ]
    lines = [
        f"{report['rows']:,} memories, embeddings {'on' if report['embeddings'] else 'off'}"
        f" (bulk load {report['load_seconds']} s)",
        "",
        *markdown.table(columns, "lrrrr", rows),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    options = harness.ServiceOptions(
        database_url=args.database_url,
        extra_env={
            "CPERSONA_EMBEDDING_MODE": "none",
            "CPERSONA_MAX_IMPORT_BYTES": str(1 << 34),
            "CPERSONA_DB_COMMAND_TIMEOUT": "600",
        },
        keep_data=args.keep,
    )
    with harness.running_service(options) as service:
        env = harness.service_env(service.data_dir, options)
        report = asyncio.run(measure(service, env, args))
    report["machine"] = machine_facts()
    write_json(args.out, report)
    print(table(report))


if __name__ == "__main__":
    main()
