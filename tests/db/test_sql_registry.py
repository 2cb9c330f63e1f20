"""The SQL registry: parsing, every query prepares with its legend's arity, none is dead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.db import sql
from service.db.pool import Database

DB_DIR = Path(sql.__file__).parent


def test_parse_queries_splits_named_blocks() -> None:
    text = "-- one --\n-- about\nSELECT 1\n\n-- two --\nSELECT $1\n"
    assert sql.parse_queries(text) == {"one": "-- about\nSELECT 1", "two": "SELECT $1"}


def test_parse_queries_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        sql.parse_queries("-- a --\nSELECT 1\n-- a --\nSELECT 2\n")


def _legend_arity(statement: str) -> int:
    numbers = [int(n) for n in re.findall(r"\$(\d+)", statement)]
    return max(numbers, default=0)


def _renderings(statement: str) -> list[str]:
    """A statement as it is sent: a shaped one (``-- shape: X`` lines, ``{name}``
    numbers) with none and with all of its shape lines."""
    shapes = set(re.findall(r"-- shape: ([a-z_]+)$", statement, re.MULTILINE))
    if not shapes:
        return [statement]
    placeholders = set(re.findall(r"\{([a-z_]+)\}", statement))
    numbers = dict.fromkeys(placeholders, 10)
    return [sql.shaped(statement, kept, numbers) for kept in (set(), shapes)]


async def test_every_query_prepares_with_the_arity_its_legend_declares(db: Database) -> None:
    async with db.admin_tx() as conn:
        for name, statement in sql.QUERIES.items():
            for rendered in _renderings(statement):
                prepared = await conn.prepare(rendered)
                assert len(prepared.get_parameters()) == _legend_arity(statement), name


def test_a_shaped_statement_keeps_its_shapes_lines_and_writes_in_its_numbers() -> None:
    statement = (
        "SELECT id FROM t\n"
        "WHERE a = $1\n"
        "  AND b = $2  -- shape: b\n"
        "  AND c = $3  -- shape: c\n"
        "LIMIT {depth}"
    )
    assert sql.shaped(statement, {"c"}, {"depth": 20}) == (
        "SELECT id FROM t\nWHERE a = $1\n  AND c = $3\nLIMIT 20"
    )
    with pytest.raises(ValueError, match="depth"):
        sql.shaped(statement, set(), {})
    with pytest.raises(ValueError, match="depth"):
        sql.shaped(statement, set(), {"depth": True})


def test_dimensioned_queries_expand_once_per_width() -> None:
    parsed = sql.parse_queries("-- near[dim] --\nSELECT $1::vector({dim})\n")
    assert parsed == {f"near_{d}": f"SELECT $1::vector({d})" for d in sql.VECTOR_DIMS}


def _uses(name: str, source: str) -> int:
    return len(re.findall(rf'QUERIES\["{name}"\]|QUERIES\[f"{name}_{{', source))


def _base_names(path: str) -> set[str]:
    widths = "|".join(str(d) for d in sql.VECTOR_DIMS)
    text = (DB_DIR / "sql" / path).read_text(encoding="utf-8")
    return {re.sub(rf"_({widths})$", "", name) for name in sql.parse_queries(text)}


def test_every_query_is_used_once_by_the_db_module_of_the_same_path() -> None:
    """``sql/health/records.sql`` pairs with ``db/health/records.py``: a query is found by name."""
    sources = {path: path.read_text() for path in DB_DIR.rglob("*.py")}
    for path, _ in sql.sql_files(sql.sql_folder()):
        module = (DB_DIR / path).with_suffix(".py")
        own = sources[module]
        for name in _base_names(path):
            assert _uses(name, own) == 1, f"{name} ({path}) is not used once in {module}"
            elsewhere = sum(_uses(name, text) for p, text in sources.items() if p != module)
            assert elsewhere == 0, f"{name} ({path}) is also used outside {module}"
