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


def test_a_part_is_written_into_the_queries_of_its_file_and_is_no_query() -> None:
    text = (
        "-- part: scope --\n-- what it is\nagent AS (SELECT $1)\n\n"
        "-- one --\nWITH {part:scope} SELECT 1\n-- two[dim] --\nWITH {part:scope} SELECT {dim}\n"
    )
    parsed = sql.parse_queries(text)
    assert parsed["one"] == "WITH agent AS (SELECT $1) SELECT 1"
    assert parsed["two_384"] == "WITH agent AS (SELECT $1) SELECT 384"
    assert "scope" not in parsed


def test_a_part_may_include_another_part() -> None:
    text = (
        "-- part: when --\n-- an expression\ncoalesce(x.at, x.created_at)\n\n"
        "-- part: scope --\nrows AS (SELECT * FROM t x WHERE {part:when} <= $1)\n\n"
        "-- one --\nWITH {part:scope} SELECT 1\n"
    )
    assert sql.parse_queries(text)["one"] == (
        "WITH rows AS (SELECT * FROM t x WHERE coalesce(x.at, x.created_at) <= $1) SELECT 1"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("-- part: p --\nx\n-- one --\nSELECT 1\n", "included by no query"),
        (
            "-- part: p --\n{part:q}\n-- part: q --\n{part:p}\n-- one --\n{part:p}\n",
            "includes itself",
        ),
        ("-- one --\nWITH {part:p} SELECT 1\n", "no part 'p'"),
        ("-- part: p --\nx\n-- part: p --\ny\n-- one --\n{part:p}\n", "duplicate part"),
    ],
)
def test_parts_that_are_unused_unknown_or_twice_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        sql.parse_queries(text)


def _legend_arity(statement: str) -> int:
    numbers = [int(n) for n in re.findall(r"\$(\d+)", statement)]
    return max(numbers, default=0)


async def test_every_query_prepares_with_the_arity_its_legend_declares(db: Database) -> None:
    async with db.admin_tx() as conn:
        for name, statement in sql.QUERIES.items():
            prepared = await conn.prepare(statement)
            assert len(prepared.get_parameters()) == _legend_arity(statement), name


def test_dimensioned_queries_expand_once_per_width() -> None:
    parsed = sql.parse_queries("-- near[dim] --\nSELECT $1::vector({dim})\n")
    assert parsed == {f"near_{d}": f"SELECT $1::vector({d})" for d in sql.VECTOR_DIMS}


def _uses(name: str, source: str) -> int:
    return len(re.findall(rf'QUERIES\["{name}"\]|QUERIES\[f"{name}_{{', source))


def _base_names(path: str) -> set[str]:
    widths = "|".join(str(d) for d in sql.VECTOR_DIMS)
    text = (DB_DIR / "sql" / path).read_text(encoding="utf-8")
    parsed = sql.parse_queries(text, sql.package_parts())  # a file may include another's parts
    return {re.sub(rf"_({widths})$", "", name) for name in parsed}


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


def test_a_file_includes_the_parts_another_file_shares() -> None:
    """Parts are one namespace for the package (a family of statements may span files);
    a file read alone knows only its own."""
    text = "-- q --\nSELECT 1 FROM {part:p}\n"
    assert sql.parse_queries(text, {"p": "shared"}) == {"q": "SELECT 1 FROM shared"}
    with pytest.raises(ValueError, match="no part 'p'"):
        sql.parse_queries(text)
    assert "recall_scope" in sql.package_parts()
