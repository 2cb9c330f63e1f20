"""reconstruct's ``trace: true`` over MCP/HTTP (docs/tools.md, "reconstruct"): the audit
keys ``recall``, ``sequence``, ``node_order`` and ``coverage`` beside ``candidate_refs``,
``clusters`` and ``cues``; refs, ranks and counts only, never stored text."""

from __future__ import annotations

import json
from typing import Any

from tests.support import Agent

LONG = (
    "The garden shed holds the old tools. "
    "Nothing else is kept there. "
    "The billing ledger lives in the cellar, behind the wine rack. "
    "Visitors rarely go down there."
)


HEAD = "the ledger uses jsonb columns. " + "Its rows are many and small. " * 26
"""A head record of 785 characters: quoted whole, it leaves no room for an excerpt in the
smallest budget (800)."""


async def _memory(client: Agent, content: str) -> str:
    stored = await client.call("store", agent_id="a", message={"content": content})
    assert stored["result"] == "stored", stored
    return f"mem:{stored['id']}"


async def _trace(client: Agent, query: str, **arguments: Any) -> tuple[Any, Any]:
    answer = await client.call("reconstruct", agent_id="a", query=query, trace=True, **arguments)
    return answer, answer["trace"]


async def test_trace_reports_the_candidate_recall_by_ref_rank_and_signal(client: Agent) -> None:
    first = await _memory(client, "billing runs on postgres")
    second = await _memory(client, "the billing job runs nightly")
    answer, trace = await _trace(client, "billing")
    recall = trace["recall"]
    assert recall["limit"] == 20
    assert recall["returned_count"] == 2
    assert [row["rank"] for row in recall["rows"]] == [1, 2]
    assert [row["ref"] for row in recall["rows"]] == trace["candidate_refs"]
    assert {row["ref"] for row in recall["rows"]} == {first, second}
    assert all(isinstance(row["match_reason"]["signal"], str) for row in recall["rows"])
    assert "sequence" not in trace  # the "items" sequence of a call without a mode
    untraced = await client.call("reconstruct", agent_id="a", query="billing")
    assert "trace" not in untraced
    assert [i["head_ref"] for i in untraced["items"]] == [i["head_ref"] for i in answer["items"]]


async def test_trace_names_the_best_blocks_of_each_quoted_record(client: Agent) -> None:
    long = await _memory(client, LONG)
    short = await _memory(client, "billing is monthly")
    _, trace = await _trace(client, "billing ledger cellar")
    assert trace["node_order"][long][0] == 2  # the third sentence holds all three words
    assert len(trace["node_order"][long]) == 3  # at most three of its four blocks
    assert trace["node_order"][short] == [0]


async def test_trace_coverage_says_which_query_words_the_cited_records_hold(
    client: Agent,
) -> None:
    ledger = await _memory(client, "the ledger is kept in postgres")
    both = await _memory(client, "billing writes the ledger nightly")
    answer, trace = await _trace(client, "billing ledger invoices")
    cited = [item["head_ref"] for item in answer["items"]]  # one record an item here
    assert set(cited) == {ledger, both}
    assert trace["coverage"] == {"billing": [both], "ledger": cited, "invoices": []}


async def test_trace_shows_the_whole_sequence_under_a_mode(client: Agent) -> None:
    await _memory(client, LONG)
    await _memory(client, "billing is monthly")
    answer, trace = await _trace(client, "billing ledger", mode="lite")
    sequence = trace["sequence"]
    assert sequence["name"] == "whole"
    assert 1 <= sequence["taken"] <= sequence["steps"]
    assert sequence["chars"] >= len(answer["items"][0]["content"])


async def test_the_trace_holds_no_stored_text(client: Agent) -> None:
    await _memory(client, LONG)
    await _memory(client, "billing writes the ledger nightly")
    for arguments in ({}, {"mode": "lite"}, {"mode": "pro"}):
        _, trace = await _trace(client, "billing ledger", **arguments)
        traced = json.dumps(trace)
        for fragment in ("garden shed", "wine rack", "writes the", "nightly"):
            assert fragment not in traced, (arguments, traced)


async def test_coverage_reads_every_cited_record_and_node_order_only_the_quoted_ones(
    client: Agent,
) -> None:
    one = await client.call(
        "store",
        agent_id="a",
        message={"content": HEAD},
        associations={"entities": [{"name": "Ledger"}]},
    )
    two = await client.call(
        "store",
        agent_id="a",
        message={"content": "Aurora is the managed cluster"},
        associations={"entities": [{"name": "Aurora"}]},
    )
    relation = {"subject": "Aurora", "predicate": "r", "object": "Ledger"}
    declared = await client.call(
        "declare_associations", agent_id="a", associations={"relations": [relation]}
    )
    assert declared["dropped"] == []
    head, walked = f"mem:{one['id']}", f"mem:{two['id']}"
    # top_k 1 keeps the walked record out of the candidates; the smallest budget (one head
    # quote, 800) leaves its excerpt out, so the answer cites it (a claim), quoting nothing
    answer, trace = await _trace(client, "ledger jsonb aurora", top_k=1, budget=1)
    (item,) = answer["items"]
    assert item["head_ref"] == head
    assert walked in [claim["ref"] for claim in item["claims"]]
    assert "excerpts" not in item
    assert trace["coverage"] == {"ledger": [head], "jsonb": [head], "aurora": [walked]}
    assert list(trace["node_order"]) == [head]
