"""Loads the named queries of ``service/db/sql/**/*.sql`` into a read-only registry.

A file holds blocks that each start with a ``-- name --`` line, followed by
comment lines (description and the ``$n`` legend) and the statement. Names are
unique across all files. Only ``service/db/**/*.py`` reads this registry: one
Python function per query, of the same name, in the module of the same path
(``sql/health/records.sql`` pairs with ``db/health/records.py``).

A block headed ``-- part: name --`` is not a query but text that the queries of the same
file include where they write ``{part:name}`` (say, the scope CTEs two statements share,
with the same ``$n``). It is written in at load time, before anything else, so the
registry holds whole statements; a part no query includes, or an include of a part the
file does not have, is an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import LiteralString

_HEADER = re.compile(r"^-- ((?:part: )?[a-z0-9_]+(?:\[dim\])?) --$", re.MULTILINE)
_PART = "part: "
_INCLUDE = re.compile(r"\{part:([a-z0-9_]+)\}")
VECTOR_DIMS = (384, 1536)
"""Embedding widths with an HNSW index (migration 0003). A query named ``name[dim]``
exists once per width as ``name_<width>``, with ``{dim}`` replaced by that constant:
pgvector needs the width in the cast that matches the partial index expression."""


def _expand(name: str, body: str) -> dict[str, str]:
    if not name.endswith("[dim]"):
        return {name: body}
    base = name.removesuffix("[dim]")
    return {f"{base}_{dim}": body.replace("{dim}", str(dim)) for dim in VECTOR_DIMS}


_SHAPE_TAG = re.compile(r" -- shape: ([a-z_]+)$")
_TYPING_TAG = "typing"
"""Lines tagged ``-- shape: typing`` only fix parameter types; they keep their ``$n``."""


def shaped(statement: str, *, omit: frozenset[str], literals: Mapping[int, int]) -> str:
    """``statement`` rendered for one shape of its arguments.

    A line ending in ``-- shape: <tag>`` is dropped when ``tag`` is in ``omit`` (its
    condition must then hold for the arguments of that shape anyway, so the result is
    unchanged); every ``$n`` of ``literals`` is written in as that integer, except on
    ``typing`` lines, which keep the parameter's type known when no other line names it.
    Why: a prepared statement's generic plan is made without the values; with the
    switched-off filters gone and the depths known, it is as good as a custom one.
    """
    if any(type(value) is not int for value in literals.values()):
        raise TypeError("only integers are written into a statement; every other value is bound")
    numbers = "|".join(map(str, literals))
    pattern = re.compile(r"\$(" + numbers + r")(?![0-9])") if literals else None
    out: list[str] = []
    for line in statement.split("\n"):
        tag = _SHAPE_TAG.search(line)
        if tag is not None and tag.group(1) in omit:
            continue
        code = not line.lstrip().startswith("--") and (tag is None or tag.group(1) != _TYPING_TAG)
        if pattern is not None and code:
            line = pattern.sub(lambda m: str(literals[int(m.group(1))]), line)
        out.append(line)
    return "\n".join(out)


def _with_parts(blocks: dict[str, str], parts: Mapping[str, str]) -> dict[str, str]:
    """``blocks`` with every ``{part:name}`` replaced by that part's text."""
    included: set[str] = set()

    def include(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in parts:
            raise ValueError(f"no part {name!r} in this file")
        included.add(name)
        return parts[name]

    whole = {header: _INCLUDE.sub(include, body) for header, body in blocks.items()}
    unused = sorted(parts.keys() - included)
    if unused:
        raise ValueError(f"part(s) {unused} included by no query")
    return whole


def _part_text(body: str) -> str:
    """A part without its leading comment lines (its description)."""
    lines = body.strip().split("\n")
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines)


def parse_queries(text: str) -> dict[str, str]:
    """Split one .sql file's text into {name: statement}, parts written in."""
    pieces = _HEADER.split(text)
    blocks: dict[str, str] = {}
    parts: dict[str, str] = {}
    for header, body in zip(pieces[1::2], pieces[2::2], strict=True):
        if header.startswith(_PART):
            name = header.removeprefix(_PART)
            if name in parts:
                raise ValueError(f"duplicate part name {name!r}")
            parts[name] = _part_text(body)
        elif header in blocks:
            raise ValueError(f"duplicate query name {header!r}")
        else:
            blocks[header] = body.strip()
    queries: dict[str, str] = {}
    for header, body in _with_parts(blocks, parts).items():
        for name, statement in _expand(header, body).items():
            if name in queries:
                raise ValueError(f"duplicate query name {name!r}")
            queries[name] = statement
    return queries


def sql_files(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """Every ``.sql`` file below ``folder`` as (relative path, entry), in path order."""
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.is_dir():
            yield from sql_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".sql"):
            yield f"{prefix}{entry.name}", entry


def sql_folder() -> Traversable:
    """The folder of the named queries inside the installed package."""
    return resources.files("service.db").joinpath("sql")


def load_queries() -> Mapping[str, LiteralString]:
    """Read every .sql file shipped in the package; reject duplicate names."""
    registry: dict[str, LiteralString] = {}
    for path, entry in sql_files(sql_folder()):
        for name, statement in parse_queries(entry.read_text(encoding="utf-8")).items():
            if name in registry:
                raise ValueError(f"duplicate query name {name!r} in {path}")
            registry[name] = statement
    return MappingProxyType(registry)


QUERIES: Mapping[str, LiteralString] = load_queries()
