"""Markdown pieces every benchmark report shares (pure functions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def machine_line(machine: Mapping[str, Any], *, python: bool = False) -> str:
    """``Machine: <cpu>, <n> cores, <mem> GiB[, Python <v>], commit <c>, <date>, load A → B``.

    Reports append their own details after it.
    """
    m = machine
    version = f" Python {m['python']}," if python else ""
    return (
        f"Machine: {m['cpu_model']}, {m['nproc']} cores, {m['memory_gib']} GiB,{version} commit"
        f" {m['git_commit']}, {m['date_utc']}, load {m['load_average_at_start']} →"
        f" {m.get('load_average_at_end')}"
    )


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal (``n/a`` for None)."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


def outcomes(counts: Mapping[str, int]) -> str:
    """Outcome counts as ``name count`` pairs in name order."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _line(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(columns: Sequence[str], align: str, rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table: the header, the alignment line, one line per row.

    ``align`` has one letter per column: ``l`` left, ``r`` right (numbers). Cells are
    rendered with ``str``, so numbers are formatted by the caller.
    """
    if len(align) != len(columns) or set(align) - {"l", "r"}:
        raise ValueError(f"align {align!r} does not fit {len(columns)} columns")
    marks = {"l": "---|", "r": "--:|"}
    return [_line(columns), "|" + "".join(marks[a] for a in align), *map(_line, rows)]
