"""The README's run command: ``serve`` on the embedded Postgres, from nothing.

Starts the real process on an empty data directory, reads the first-start key it
prints, calls a tool with it, stops it with SIGTERM and checks that Postgres
stopped too; then simulates a killed run and checks the next start recovers.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from service.db.embedded import HANDLE_FILE, prune_dead_handles
from tests.support import run_cli, stop_embedded_postmaster


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(
    data_dir: Path, port: int, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.pop("DATABASE_URL", None)
    env["CPERSONA_DATA_DIR"] = str(data_dir)
    env.update(extra_env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def _stop(process: subprocess.Popen[str], *, kill: bool = False) -> None:
    if kill:
        process.kill()
    else:
        process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()


def _wait_ready(port: int, deadline: float = 60.0) -> None:
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("service did not become ready")


def _postmaster_running(data_dir: Path) -> bool:
    pid_file = data_dir / "pgdata" / "postmaster.pid"
    if not pid_file.exists():
        return False
    return bool(psutil.pid_exists(int(pid_file.read_text().split()[0])))


def _call_store(port: int, key: str | None) -> dict[str, object]:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "store", "arguments": {"agent_id": "a", "message": {"content": "hi"}}},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    response = httpx.post(f"http://127.0.0.1:{port}/mcp", json=request, headers=headers)
    return dict(json.loads(response.json()["result"]["content"][0]["text"]))


def test_serve_bootstraps_a_key_serves_and_stops_postgres(tmp_path: Path) -> None:
    port = _free_port()
    process = _start(tmp_path, port)
    try:
        _wait_ready(port)
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(4)]
        key = lines[1].strip()
        assert key.startswith("cpk_")
        assert "claude mcp add --transport http" in lines[3]
        assert _call_store(port, key)["result"] == "stored"
    finally:
        _stop(process)
    assert not _postmaster_running(tmp_path)


def test_a_killed_run_leaves_nothing_that_blocks_the_next(tmp_path: Path) -> None:
    port = _free_port()
    first = _start(tmp_path, port)
    _wait_ready(port)
    _stop(first, kill=True)
    assert first.pid in json.loads((tmp_path / "pgdata" / HANDLE_FILE).read_text())
    second = _start(tmp_path, port)
    try:
        _wait_ready(port)
    finally:
        _stop(second)
    assert not _postmaster_running(tmp_path)


def test_prune_dead_handles_keeps_live_pids(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / HANDLE_FILE).write_text(json.dumps([os.getpid(), dead.pid]))
    assert prune_dead_handles(tmp_path) == [dead.pid]
    assert json.loads((tmp_path / HANDLE_FILE).read_text()) == [os.getpid()]
    assert prune_dead_handles(tmp_path / "missing") == []


def test_db_url_leaves_the_embedded_server_running_for_psql(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    env.pop("DATABASE_URL", None)
    env["CPERSONA_DATA_DIR"] = str(tmp_path)
    url = subprocess.run(
        [sys.executable, "-m", "service", "db", "url"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout.strip()
    try:
        assert _postmaster_running(tmp_path)
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "import asyncio, asyncpg, sys\n"
                "async def main():\n    c = await asyncpg.connect(sys.argv[1])\n"
                "    print(await c.fetchval('SELECT count(*) FROM tenants'))\n    await c.close()\n"
                "asyncio.run(main())",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert result.stdout.strip() == "0"
    finally:
        stop_embedded_postmaster(tmp_path)


def test_a_port_in_use_stops_serve_in_one_line_before_anything_is_created(
    tmp_path: Path,
) -> None:
    """Issue 11: a first start on a taken port created the tenant, printed a key and a
    connect line for the other process, logged ``serving``, then failed to bind."""
    data_dir = tmp_path / "data"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_cli(None, "serve", "--port", str(port), env={"CPERSONA_DATA_DIR": str(data_dir)})
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "cpk_" not in done.stdout + done.stderr
    assert done.stdout == ""
    assert not (data_dir / "pgdata").exists()


def test_an_instance_without_authentication_prints_no_key(tmp_path: Path) -> None:
    port = _free_port()
    process = _start(tmp_path, port, {"CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "true"})
    try:
        _wait_ready(port)
        assert _call_store(port, None)["result"] == "stored"  # no key needed
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert "cpk_" not in out
    assert "API key" not in out
