"""Loads the named queries of ``service/db/sql/**/*.sql`` into a read-only registry.

A file holds blocks that each start with a ``-- name --`` line, followed by
comment lines (description and the ``$n`` legend) and the statement. Names are
unique across all files. Only ``service/db/**/*.py`` reads this registry: one
Python function per query, of the same name, in the module of the same path
(``sql/health/records.sql`` pairs with ``db/health/records.py``).

A block headed ``-- part: name --`` is not a query but text that the queries of the same
file include where they write ``{part:name}`` (say, the scope CTEs two statements share,
with the same ``$n``); a part may include other parts. It is written in at load time,
before anything else, so the registry holds whole statements; a part no query includes,
or an include of a part the file does not have, is an error.

A statement with many parameters names them instead of numbering them: ``:tenant_id``
where it would write ``$1`` (a ``::type`` cast is not a name). Its legend declares the
order: from the first comment line that begins with a name (``-- :tenant_id uuid, ...``),
the order in which the names first appear in the comment lines; the loader writes
``$n`` in that order, so the registry holds the positional statement Postgres prepares,
and :data:`PARAMETERS` keeps the names. Callers bind a mapping with :func:`arguments`,
which refuses a missing or an unknown name; a name used twice is one parameter, bound
once. Values stay bound: only the placeholder's spelling changes. Why: past ten ``$n`` a
caller's positional list no longer reads against the legend
(docs/contributing.md, "Where a new thing goes").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import LiteralString

_NAME = re.compile(r"(?<![:\w[]):([a-z_][a-z0-9_]*)(?!:])")
"""A named placeholder, ``:name``; never the second colon of a ``::type`` cast."""
_LEGEND = re.compile(r"\s*-- :[a-z_]")
"""The first line of a legend of names: a comment that begins with one."""
_NUMBERED = re.compile(r"\$[0-9]")
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


def _with_parts(
    blocks: dict[str, str], parts: Mapping[str, str], used: set[str] | None = None
) -> dict[str, str]:
    """``blocks`` with every ``{part:name}`` replaced by that part's text, and the parts
    that text includes in turn (a part may name a shared expression another part uses;
    a part that includes itself, directly or not, is an error). Without ``used`` every
    part must be included here; with it, the parts included are added to it (the caller
    checks that each part is used somewhere)."""
    included: set[str] = set()
    within: list[str] = []

    def include(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in parts:
            raise ValueError(f"no part {name!r} in this file or the package")
        if name in within:
            raise ValueError(f"part {name!r} includes itself ({' -> '.join([*within, name])})")
        included.add(name)
        within.append(name)
        text = _INCLUDE.sub(include, parts[name])
        within.pop()
        return text

    whole = {header: _INCLUDE.sub(include, body) for header, body in blocks.items()}
    if used is not None:
        used.update(included)
        return whole
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


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("--")


def _positional(statement: str) -> tuple[str, tuple[str, ...]]:
    """``statement`` with its ``:name`` placeholders written as ``$n``, and the names in
    ``$n`` order (the order of the legend); a statement without names is unchanged."""
    lines = statement.split("\n")
    code = [line for line in lines if not _is_comment(line)]
    used = {name for line in code for name in _NAME.findall(line)}
    if not used:
        return statement, ()
    if any(_NUMBERED.search(line) for line in code):
        raise ValueError(f"both $n and named parameters ({sorted(used)}) in one statement")
    start = next((i for i, line in enumerate(lines) if _LEGEND.match(line)), None)
    if start is None:
        raise ValueError(f"named parameters {sorted(used)} without a legend line '-- :name ...'")
    legend = [line for line in lines[start:] if _is_comment(line)]
    declared = list(dict.fromkeys(n for line in legend for n in _NAME.findall(line)))
    order = tuple(name for name in declared if name in used)
    if used - set(order):
        raise ValueError(f"parameter(s) {sorted(used - set(order))} missing from the legend")
    number = {name: f"${position}" for position, name in enumerate(order, start=1)}
    rewritten = [
        line if _is_comment(line) else _NAME.sub(lambda m: number[m.group(1)], line)
        for line in lines
    ]
    return "\n".join(rewritten), order


def parse_queries(text: str, shared: Mapping[str, str] | None = None) -> dict[str, str]:
    """Split one .sql file's text into {name: statement}, parts written in (its own and
    ``shared``, e.g. :func:`package_parts`), named parameters written as ``$n``."""
    return {name: statement for name, (statement, _) in parse_named(text, shared).items()}


def _split(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """One .sql file's queries and parts, by name (bodies as written)."""
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
    return blocks, parts


def parse_named(
    text: str, shared: Mapping[str, str] | None = None, used: set[str] | None = None
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Split one .sql file's text into {name: (statement, parameter names)}; the names
    are empty for a statement numbered ``$n`` by hand. A file includes its own parts
    and, given ``shared``, the parts of the other files of the package (``_load``: a
    large family of statements may then span files); ``used`` collects the parts
    included."""
    blocks, parts = _split(text)
    available = {**(shared or {}), **parts}
    queries: dict[str, tuple[str, tuple[str, ...]]] = {}
    if shared is not None and used is None:
        used = set()  # another file may be the one including a shared part
    for header, body in _with_parts(blocks, available, used).items():
        for name, statement in _expand(header, body).items():
            if name in queries:
                raise ValueError(f"duplicate query name {name!r}")
            queries[name] = _positional(statement)
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


def _shared_parts(texts: Mapping[str, str]) -> dict[str, str]:
    """The parts of every file, by name: one namespace for the package."""
    shared: dict[str, str] = {}
    for path, text in texts.items():
        for name, part in _split(text)[1].items():
            if name in shared:
                raise ValueError(f"duplicate part name {name!r} in {path}")
            shared[name] = part
    return shared


def package_parts() -> dict[str, str]:
    """The parts of every .sql file shipped in the package, by name."""
    return _shared_parts(
        {path: entry.read_text(encoding="utf-8") for path, entry in sql_files(sql_folder())}
    )


def _load() -> tuple[Mapping[str, LiteralString], Mapping[str, tuple[str, ...]]]:
    """Read every .sql file shipped in the package; reject duplicate names and parts no
    query includes. Returns the statements and, for the statements with named
    parameters, their names."""
    registry: dict[str, LiteralString] = {}
    names: dict[str, tuple[str, ...]] = {}
    texts = {path: entry.read_text(encoding="utf-8") for path, entry in sql_files(sql_folder())}
    shared = _shared_parts(texts)
    used: set[str] = set()
    for path, text in texts.items():
        for name, (statement, parameters) in parse_named(text, shared, used).items():
            if name in registry:
                raise ValueError(f"duplicate query name {name!r} in {path}")
            registry[name] = statement
            if parameters:
                names[name] = parameters
    unused = sorted(shared.keys() - used)
    if unused:
        raise ValueError(f"part(s) {unused} included by no query")
    return MappingProxyType(registry), MappingProxyType(names)


def load_queries() -> Mapping[str, LiteralString]:
    """Read every .sql file shipped in the package; reject duplicate names."""
    return _load()[0]


QUERIES, PARAMETERS = _load()
"""The named queries, and the parameter names (in ``$n`` order) of those that name them."""


def arguments(query: str, values: Mapping[str, object]) -> list[object]:
    """The positional arguments of ``query`` (a name in :data:`PARAMETERS`) from
    ``values`` by parameter name. Refuses (``TypeError``, a caller's bug) a name the
    statement does not have and one it has that ``values`` lacks."""
    order = PARAMETERS[query]
    unknown = sorted(values.keys() - set(order))
    missing = [name for name in order if name not in values]
    if unknown or missing:
        raise TypeError(f"{query}: unknown argument(s) {unknown}, missing argument(s) {missing}")
    return [values[name] for name in order]


_PLACEHOLDER = re.compile(r"\$([0-9]+)")


@functools.lru_cache(maxsize=256)
def placeholders(statement: str) -> int:
    """How many parameters ``statement`` reads: its highest ``$n``, checked to be all of
    ``$1``..``$n`` (Postgres cannot type a parameter no line names); ValueError else."""
    numbers = {int(n) for n in _PLACEHOLDER.findall(statement)}
    highest = max(numbers, default=0)
    if numbers != set(range(1, highest + 1)):
        gaps = sorted(set(range(1, highest + 1)) - numbers)
        raise ValueError(f"a shape leaves out parameter(s) {gaps} that are not the last")
    return highest


def shaped_arguments(query: str, statement: str, values: Mapping[str, object]) -> list[object]:
    """The positional arguments of ``statement``, one shape of ``query`` (:func:`shaped`):
    :func:`arguments` (which refuses a missing or an unknown name), less the last ones
    when the shape left out every line that reads them (:func:`placeholders`). Why: a
    parameter only one shape reads (recall's ``as_of``) is declared last, so the other
    shapes keep their ``$n`` and their statements stay byte for byte what they were,
    plans included."""
    return arguments(query, values)[: placeholders(statement)]


def number(query: str, parameter: str) -> int:
    """The ``$n`` of a named parameter of ``query``: what :func:`shaped` takes to write a
    depth into the statement."""
    return PARAMETERS[query].index(parameter) + 1
