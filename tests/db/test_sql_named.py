"""Named parameters in the SQL registry: ``:name`` written as ``$n`` at load time, in the
legend's order, and bound by name through ``sql.arguments``."""

from __future__ import annotations

import re

import pytest

from service.db import sql

NAMED = """-- pair --
-- Two rows of one tenant.
-- :tenant_id uuid, :first text, :second text
SELECT :second::text, :first
FROM memories WHERE tenant_id = :tenant_id AND tenant_id = :tenant_id
"""


def test_names_become_numbers_in_the_legends_order() -> None:
    statement, names = sql.parse_named(NAMED)["pair"]
    assert names == ("tenant_id", "first", "second")
    code = statement.split("\n")[2:]
    assert code == ["SELECT $3::text, $2", "FROM memories WHERE tenant_id = $1 AND tenant_id = $1"]
    assert sql.parse_queries(NAMED)["pair"] == statement


def test_a_statement_numbered_by_hand_has_no_names() -> None:
    assert sql.parse_named("-- one --\n-- $1 x\nSELECT $1::int\n") == {
        "one": ("-- $1 x\nSELECT $1::int", ())
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("-- q --\n-- :a int\nSELECT :a, :b\n", r"\['b'\] missing from the legend"),
        ("-- q --\n-- :a int, $2 b\nSELECT :a, $2\n", "both"),
    ],
)
def test_a_name_the_legend_lacks_or_a_mix_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        sql.parse_named(text)


def test_arguments_bind_by_name_and_a_name_used_twice_once() -> None:
    query = "recall_lexical"
    names = sql.PARAMETERS[query]
    values = {name: f"<{name}>" for name in names}
    bound = sql.arguments(query, values)
    assert bound == [f"<{name}>" for name in names]
    statement = sql.QUERIES[query]
    # tenant_id appears many times in the statement and is bound once, as $1
    assert names[0] == "tenant_id"
    assert statement.count("$1 ") + statement.count("$1\n") + statement.count("$1)") > 3
    numbers = {int(n) for n in re.findall(r"\$(\d+)", statement)}
    assert numbers == set(range(1, len(names) + 1))


def test_a_missing_argument_is_refused() -> None:
    values = dict.fromkeys(sql.PARAMETERS["store_memory"])
    del values["content"]
    with pytest.raises(TypeError, match=r"missing argument\(s\) \['content'\]"):
        sql.arguments("store_memory", values)


def test_an_unknown_argument_is_refused() -> None:
    values: dict[str, object] = dict.fromkeys(sql.PARAMETERS["store_memory"])
    values["contents"] = "typo"
    with pytest.raises(TypeError, match=r"unknown argument\(s\) \['contents'\]"):
        sql.arguments("store_memory", values)


def test_a_named_parameter_has_a_number() -> None:
    assert sql.number("recall_lexical", "tenant_id") == 1
    assert sql.number("recall_lexical", "depth") == 8


def test_no_statement_takes_more_than_ten_numbered_parameters() -> None:
    """Past ten, a statement names its parameters.

    (docs/contributing.md, "Where a new thing goes")
    """
    crowded = [
        name
        for name, statement in sql.QUERIES.items()
        if name not in sql.PARAMETERS
        and max((int(n) for n in re.findall(r"\$(\d+)", statement)), default=0) > 10
    ]
    assert crowded == []


SHAPED = """-- pick --
-- Rows of one tenant, since a time in one shape.
-- :tenant_id uuid, :limit int
-- :since timestamptz (shape since only) -- shape: since
SELECT * FROM memories WHERE tenant_id = :tenant_id
  AND created_at >= :since::timestamptz -- shape: since
LIMIT :limit::int
"""


def test_a_shape_binds_only_the_parameters_its_lines_read() -> None:
    """A parameter only one shape reads is declared last, so the other shapes keep every
    ``$n`` and their statement text; ``shaped_arguments`` then binds one fewer."""
    statement, names = sql.parse_named(SHAPED)["pick"]
    assert names == ("tenant_id", "limit", "since")
    without = sql.shaped(statement, omit=frozenset({"since"}), literals={})
    assert "$3" not in without
    assert ":since" not in without
    assert sql.placeholders(without) == 2  # the first two of the bound values
    assert sql.placeholders(statement) == 3


def test_a_shape_that_leaves_out_a_parameter_before_the_last_is_refused() -> None:
    with pytest.raises(ValueError, match=r"parameter\(s\) \[2\] that are not the last"):
        sql.placeholders("SELECT $1, $3")


@pytest.mark.parametrize(
    "query", ["recall_lexical", "recall_vectors_384", "recall_cue_384", "recall_cue_wide_384"]
)
def test_recalls_as_of_is_their_last_parameter_and_only_its_shape_reads_it(query: str) -> None:
    """The default shapes of the recall statements are what they were before ``as_of``
    (docs/tools.md, "Facts that change"): no line of theirs reads it, so they bind one
    argument fewer; the ``as_of`` shape binds it."""
    from service.db import recall

    names = sql.PARAMETERS[query]
    assert names[-1] == "as_of"
    values = dict.fromkeys(names)
    default = recall.shape(sql.QUERIES[query], frozenset({"current", "as_of"}), ())
    assert f"${len(names)}" not in default
    assert len(sql.shaped_arguments(query, default, values)) == len(names) - 1
    read = recall.shape(sql.QUERIES[query], frozenset({"current"}), ())
    assert f"${len(names)}::timestamptz" in read
    assert len(sql.shaped_arguments(query, read, values)) == len(names)
