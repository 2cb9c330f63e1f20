"""CPU accounting: where the cores went (server, embedded Postgres, this client, the rest)."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

import psutil

from bench.harness.serving import Service, postmaster_pid

BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (0 if it is gone)."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0
    return float(times.user) + float(times.system)


def _server_cpu(pid: int) -> float:
    """CPU seconds of ``serve`` and the worker processes it spawned (``--workers``); an
    embedded Postgres it started is counted as Postgres, not here."""
    total = process_cpu(pid)
    with contextlib.suppress(psutil.NoSuchProcess):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if not child.name().startswith("postgres"):
                    total += process_cpu(child.pid)
    return total


def _postgres_cpu(pgdata: Path | None) -> dict[int, float] | None:
    """CPU seconds per process of the embedded Postgres (postmaster and backends)."""
    root = postmaster_pid(pgdata)
    if root is None:
        return None
    pids = [root]
    with contextlib.suppress(psutil.NoSuchProcess):
        pids += [int(child.pid) for child in psutil.Process(root).children(recursive=True)]
    return {pid: process_cpu(pid) for pid in pids}


def _system_cpu() -> tuple[float, float]:
    """Busy and stolen CPU seconds of the whole machine since boot (all cores).

    Busy is user + nice + system + irq + softirq (guest time is already in
    user); steal is time the hypervisor gave this VM's CPUs to someone else.
    """
    times = psutil.cpu_times()
    busy = sum(float(getattr(times, name, 0.0)) for name in BUSY_FIELDS)
    return busy, float(getattr(times, "steal", 0.0))


def machine_busy_cores(seconds: float = 1.0) -> float:
    """How many cores the machine keeps busy right now (sampled over ``seconds``)."""
    before, _ = _system_cpu()
    time.sleep(seconds)
    after, _ = _system_cpu()
    return round((after - before) / seconds, 2)


@dataclasses.dataclass(frozen=True)
class CpuSnapshot:
    """CPU counters at one instant: server, embedded Postgres, this client, the machine."""

    wall: float
    server: float
    postgres: dict[int, float] | None
    client: float
    machine: float
    steal: float


def cpu_snapshot(service: Service) -> CpuSnapshot:
    """Read the CPU counters now."""
    machine, steal = _system_cpu()
    return CpuSnapshot(
        wall=time.perf_counter(),
        server=_server_cpu(service.process.pid),
        postgres=_postgres_cpu(service.pgdata),
        client=time.process_time(),
        machine=machine,
        steal=steal,
    )


def cpu_usage(before: CpuSnapshot, after: CpuSnapshot, calls: int) -> dict[str, Any]:
    """CPU used between two snapshots: cores busy on average and milliseconds per call.

    Postgres backends that exited between the snapshots are not counted;
    ``other`` is everything else busy on the machine (other users, kernel
    network work outside the processes); ``steal`` is CPU the hypervisor took.
    """
    wall = after.wall - before.wall
    used: dict[str, float | None] = {
        "server": after.server - before.server,
        "client": after.client - before.client,
        "postgres": None,
    }
    if before.postgres is not None and after.postgres is not None:
        used["postgres"] = sum(
            v - before.postgres.get(pid, 0.0) for pid, v in after.postgres.items()
        )
    known = sum(v for v in used.values() if v is not None)
    machine = after.machine - before.machine
    used["machine"] = machine
    used["other"] = max(0.0, machine - known)
    used["steal"] = after.steal - before.steal
    return {
        name: None
        if seconds is None
        else {
            "cpu_s": round(seconds, 3),
            "cores": round(seconds / wall, 2) if wall > 0 else None,
            "ms_per_call": round(seconds * 1000 / calls, 3) if calls else None,
        }
        for name, seconds in used.items()
    }
