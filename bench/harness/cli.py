"""The benchmarks' command-line edges: NAME=VALUE options, clean exits, result files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from bench.harness.serving import BenchError

T = TypeVar("T")


def env_pair(item: str) -> tuple[str, str]:
    """An ``--env NAME=VALUE`` argument as ``(NAME, VALUE)``."""
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {item!r}")
    return name, value


def run_or_exit(run: Callable[[], T]) -> T:
    """``run()``; a benchmark failure or Ctrl-C becomes a one-line exit message.

    The services are stopped by then: the exception has left their ``with`` blocks.
    """
    try:
        return run()
    except BenchError as exc:
        raise SystemExit(f"bench: {exc}") from None
    except KeyboardInterrupt:
        raise SystemExit("bench: interrupted (service stopped)") from None


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)


def write_results(out: Path, results: Mapping[str, Any], tables: str) -> None:
    """The JSON at ``out``, the Markdown ``tables`` next to it (``.md``), the tables printed."""
    write_json(out, results)
    out.with_suffix(".md").write_text(tables)
    print(tables)
    print(f"results: {out} (tables: {out.with_suffix('.md')})", file=sys.stderr)
