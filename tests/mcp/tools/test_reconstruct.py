"""reconstruct over MCP/HTTP (docs/tools.md, "reconstruct"): CPersona 2.6's acceptance
behaviours 4-8, 10-19 and 21-24, and the isolation and bounds around them."""

from __future__ import annotations

import json
from typing import Any

from service.mcp.shaping.reconstruct.counter import cl100k_tokens
from tests.support import Agent, text


async def _memory(client: Agent, content: str, agent: str = "a", **message: Any) -> int:
    stored = await client.call("store", agent_id=agent, message={"content": content, **message})
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def _reconstruct(client: Agent, query: str, agent: str = "a", **arguments: Any) -> Any:
    return await client.call("reconstruct", agent_id=agent, query=query, **arguments)


async def test_04_an_empty_query_returns_recent_memories_most_recent_first(
    client: Agent,
) -> None:
    first = await _memory(client, "the oldest note", timestamp="2026-03-01T10:00:00Z")
    second = await _memory(client, "a newer note", timestamp="2026-03-02T10:00:00Z")
    third = await _memory(client, "the newest note", timestamp="2026-03-03T10:00:00Z")
    answer = await _reconstruct(client, "", count=2)
    assert [item["head_ref"] for item in answer["items"]] == [f"mem:{third}", f"mem:{second}"]
    assert all(len(item["claims"]) == 1 for item in answer["items"])
    assert "shortfall_reason" not in answer
    assert answer["returned_count"] == 2
    assert f"mem:{first}" not in str(answer)


async def test_05_count_zero_returns_no_items_and_says_why(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    answer = await _reconstruct(client, "billing", count=0)
    answer.pop("advisory")  # no embedder here: the degraded advisory rides along
    assert answer == {
        "items": [],
        "effective_count": 0,
        "returned_count": 0,
        "shortfall_reason": "count_zero",
    }


async def test_06_a_count_over_the_maximum_is_clamped_and_reported(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    answer = await _reconstruct(client, "billing", count=50)
    assert answer["effective_count"] == 10
    assert answer["requested_count"] == 50
    assert answer["count_policy"] == {
        "source": "caller",
        "clamped": True,
        "reason": "count_requested",
    }
    assert list(answer)[:5] == [
        "items",
        "requested_count",
        "effective_count",
        "returned_count",
        "count_policy",
    ]


async def test_07_a_budget_below_one_head_quote_is_raised_and_the_first_item_returned(
    client: Agent,
) -> None:
    mem = await _memory(client, "billing runs on postgres " * 60)
    answer = await _reconstruct(client, "billing", budget=10)
    assert answer["requested_budget"] == 10
    assert answer["budget_policy"] == {
        "source": "caller",
        "clamped": True,
        "reason": "raised_to_one_excerpt",
    }
    assert answer["items"][0]["head_ref"] == f"mem:{mem}"
    assert len(answer["items"][0]["content"]) == 800


async def test_08_trace_shows_the_default_budget_bounds_and_policy(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    answer = await _reconstruct(client, "billing", trace=True)
    assert answer["effective_budget"] == 6000
    assert answer["budget_policy"]["reason"] == "default_fits_the_window"
    assert answer["bounds"] == {"top_k": 20, "max_hops": 2, "max_evidence": 40}
    assert answer["reconstruction"]["policy"] == "v1"
    assert answer["trace"]["candidate_refs"] == [answer["items"][0]["head_ref"]]
    assert answer["items"][0]["claims"][0]["why"] == "seed"
    assert answer["items"][0]["independence_reason"] == "singleton"


async def test_10_mode_pro_widens_the_window_and_caps_tokens(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    answer = await _reconstruct(client, "billing", mode="pro")
    assert answer["effective_count"] == 15
    assert answer["cap"] == 5000
    assert answer["mode"] == "pro"
    assert "ranges" not in answer["items"][0]


async def test_11_mode_with_lite_is_a_tool_failure_with_no_items(client: Agent) -> None:
    answer = await _reconstruct(client, "billing", mode="pro", lite=True)
    assert answer == {
        "ok": False,
        "error": 'pass mode or lite, not both: lite=true is mode "lite"',
        "items": [],
        "returned_count": 0,
    }


async def test_12_breadth_bounds_and_the_mode_are_schema_checked(client: Agent) -> None:
    for arguments, message in (
        ({"top_k": 500}, "500 is greater than the maximum of 100"),
        ({"max_hops": 9}, "9 is greater than the maximum of 5"),
        ({"max_evidence": 101}, "101 is greater than the maximum of 100"),
        ({"mode": "mega"}, "'mega' is not one of ['lite', 'pro']"),
        ({"top_k": 0}, "0 is less than the minimum of 1"),
        ({"budget": 0}, "0 is less than the minimum of 1"),
    ):
        result = await client.raw("reconstruct", {"agent_id": "a", "query": "q", **arguments})
        assert result.is_error, arguments
        assert message in str(result.content), (arguments, result.content)


async def test_13_another_agents_query_finds_no_relevant_evidence(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    answer = await _reconstruct(client, "billing", agent="b")
    assert answer["items"] == []
    assert answer["shortfall_reason"] == "no_relevant_evidence"


async def test_14_and_17_one_sources_burst_is_one_item_claims_newest_first(
    client: Agent,
) -> None:
    source = {"type": "User", "id": "u1"}
    first = await _memory(
        client, "deploy window opened", source=source, timestamp="2026-03-10T09:00:00Z"
    )
    second = await _memory(
        client, "deploy window confirmed", source=source, timestamp="2026-03-10T09:00:45Z"
    )
    third = await _memory(
        client, "deploy window closed", source=source, timestamp="2026-03-10T09:02:00Z"
    )
    answer = await _reconstruct(client, "deploy window")
    by_head = {frozenset(c["ref"] for c in item["claims"]): item for item in answer["items"]}
    burst = by_head[frozenset({f"mem:{first}", f"mem:{second}"})]
    assert burst["independence_reason"] == "cluster:adjacent"
    assert [c["ref"] for c in burst["claims"]] == [f"mem:{second}", f"mem:{first}"]
    assert [c["as_of"] for c in burst["claims"]] == [
        "2026-03-10T09:00:45Z",
        "2026-03-10T09:00:00Z",
    ]
    alone = by_head[frozenset({f"mem:{third}"})]
    assert "independence_reason" not in alone
    assert answer["returned_count"] == 2


async def test_15_a_memory_inside_a_candidate_episode_bundles_and_is_supported(
    client: Agent,
) -> None:
    history = [
        {"role": "user", "content": "start", "timestamp": "2026-03-10T08:59:00Z"},
        {"role": "user", "content": "end", "timestamp": "2026-03-10T10:00:00Z"},
    ]
    episode = await client.call(
        "archive_episode",
        agent_id="a",
        summary="Session on billing migration planning",
        history=history,
    )
    mem = await _memory(
        client, "Decision: billing migration goes first", timestamp="2026-03-10T09:00:30Z"
    )
    answer = await _reconstruct(client, "billing migration")
    assert answer["returned_count"] == 1
    (item,) = answer["items"]
    assert item["independence_reason"] == "cluster:episode"
    ep = f"ep:{episode['episode_id']}"
    claims = {c["ref"]: c for c in item["claims"]}
    assert claims[f"mem:{mem}"]["roles"] == [{"ref": ep, "role": "supports"}]
    assert claims[f"mem:{mem}"]["why"] == "cluster:episode"
    assert claims[ep]["as_of"] == "2026-03-10T08:59:00Z"


async def test_16_a_declared_supersedes_between_candidates_is_a_role(client: Agent) -> None:
    old = await _memory(client, "billing database is mysql", timestamp="2026-03-01T00:00:00Z")
    new = await _memory(
        client, "correction: billing database is postgres", timestamp="2026-04-01T00:00:00Z"
    )
    declared = await client.call(
        "declare_associations",
        agent_id="a",
        associations={
            "relations": [
                {"subject": f"mem:{new}", "predicate": "Supersedes", "object": f"mem:{old}"}
            ]
        },
    )
    assert declared["dropped"] == []
    answer = await _reconstruct(client, "billing database")
    (item,) = answer["items"]
    claims = {c["ref"]: c for c in item["claims"]}
    assert claims[f"mem:{old}"]["roles"] == [{"ref": f"mem:{new}", "role": "supersedes"}]
    assert claims[f"mem:{new}"]["why"] == "relation:supersedes"
    assert item["independence_reason"] == "cluster:relation"
    assert [c["ref"] for c in item["claims"]] == [f"mem:{new}", f"mem:{old}"]


async def _walk_fixture(client: Agent) -> tuple[int, int]:
    one = await client.call(
        "store",
        agent_id="a",
        message={"content": "the ledger uses jsonb columns"},
        associations={"entities": [{"name": "Ledger"}]},
    )
    two = await client.call(
        "store",
        agent_id="a",
        message={"content": "Aurora is the managed cluster"},
        associations={"entities": [{"name": "Aurora"}]},
    )
    declared = await client.call(
        "declare_associations",
        agent_id="a",
        associations={"relations": [{"subject": "Aurora", "predicate": "r", "object": "Ledger"}]},
    )
    assert declared["dropped"] == []
    return int(one["id"]), int(two["id"])


async def test_18_the_relation_walk_adds_evidence_within_max_hops_and_not_under_a_mode(
    client: Agent,
) -> None:
    one, two = await _walk_fixture(client)
    answer = await _reconstruct(client, "jsonb")
    (item,) = answer["items"]
    assert item["head_ref"] == f"mem:{one}"
    walked = next(c for c in item["claims"] if c["ref"] == f"mem:{two}")
    assert walked == {"ref": f"mem:{two}", "as_of": walked["as_of"], "why": "relation:r", "hops": 1}
    assert item["excerpts"] == [{"ref": f"mem:{two}", "content": "Aurora is the managed cluster"}]
    assert "bounds" not in answer
    no_hops = await _reconstruct(client, "jsonb", max_hops=0)
    assert f"mem:{two}" not in str(no_hops["items"])
    assert "max_hops" in no_hops["bounds"]["omitted"]
    lite = await _reconstruct(client, "jsonb", mode="lite")
    assert f"mem:{two}" not in str(lite["items"])


async def test_19_max_evidence_one_keeps_the_head_only(client: Agent) -> None:
    source = {"type": "User", "id": "u1"}
    for second in range(3):
        await _memory(
            client,
            f"incident {second} on the queue",
            source=source,
            timestamp=f"2026-03-10T09:00:0{second}Z",
        )
    full = await _reconstruct(client, "incident queue")
    assert len(full["items"][0]["claims"]) == 3
    answer = await _reconstruct(client, "incident queue", max_evidence=1)
    (item,) = answer["items"]
    assert [c["ref"] for c in item["claims"]] == [item["head_ref"]]
    assert item["claims_omitted"] == 2
    assert answer["bounds"]["omitted"] == ["max_evidence"]
    assert answer["bounds"]["max_evidence"] == 1


async def test_21_a_small_budget_returns_one_item_and_says_the_budget_ran_out(
    client: Agent,
) -> None:
    text = ("The billing migration plan covers the ledger. " * 38)[:1709]
    await _memory(client, text)
    await _memory(client, text.replace("ledger", "queue"))
    answer = await _reconstruct(client, "billing migration", budget=900)
    assert answer["returned_count"] == 1
    assert answer["shortfall_reason"] == "budget_exhausted"
    assert answer["effective_budget"] == 900
    assert answer["used_budget"] <= 900


async def test_22_top_k_one_reports_the_candidate_bound_reached(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    await _memory(client, "billing runs nightly")
    answer = await _reconstruct(client, "billing", top_k=1)
    assert answer["bounds"]["reached"] == ["top_k"]
    assert answer["bounds"]["top_k"] == 1
    assert answer["returned_count"] == 1


async def test_23_window_items_never_exceed_the_window(client: Agent) -> None:
    for n in range(4):
        await _memory(client, f"billing note number {n}")
    answer = await _reconstruct(client, "billing", count=2)
    assert answer["returned_count"] - answer.get("reserved_count", 0) <= answer["effective_count"]
    assert all("admission" not in item for item in answer["items"])
    assert "shortfall_reason" not in answer


async def test_24_identical_calls_give_identical_bytes(client: Agent) -> None:
    source = {"type": "User", "id": "u1"}
    for n in range(5):
        await _memory(
            client,
            f"billing note {n} on the ledger",
            source=source,
            timestamp=f"2026-03-10T09:0{n}:00Z",
        )
    await _walk_fixture(client)
    for arguments in ({"query": "billing ledger jsonb"}, {"query": "ledger", "trace": True}):
        answers = [
            await client.raw("reconstruct", {"agent_id": "a", **arguments}) for _ in range(3)
        ]
        texts = [text(answer) for answer in answers]
        assert texts[1] == texts[2]  # byte for byte (the advisory's runbook shortens once)
        first = json.loads(texts[0])
        first["advisory"]["runbook"] = json.loads(texts[1])["advisory"]["runbook"]
        assert json.dumps(first, ensure_ascii=False, separators=(",", ":")) == texts[1]


async def test_query_expansion_reaches_a_memory_through_a_declared_alias(client: Agent) -> None:
    mem = await _memory(client, "BillSvc invoices nightly")
    before = await _reconstruct(client, "billing service", trace=True)
    assert before["items"] == []
    await client.call(
        "declare_associations",
        agent_id="a",
        associations={"entities": [{"name": "Billing Service", "aliases": ["BillSvc"]}]},
    )
    answer = await _reconstruct(client, "billing service", trace=True)
    assert [item["head_ref"] for item in answer["items"]] == [f"mem:{mem}"]
    assert answer["trace"]["cues"] == {"entities": ["Billing Service"], "terms": ["BillSvc"]}
    recall = await client.call("recall", agent_id="a", query="billing service")
    assert recall["messages"] == []


async def test_09_lite_ends_with_its_cap_and_counts_its_own_tokens(client: Agent) -> None:
    await _memory(client, "billing runs on postgres " * 80)
    await _memory(client, "billing runs nightly")
    result = await client.raw("reconstruct", {"agent_id": "a", "query": "billing", "mode": "lite"})
    answer = json.loads(text(result))
    assert list(answer)[-3:] == ["mode", "cap", "used_tokens"]
    assert (answer["mode"], answer["cap"]) == ("lite", 3000)
    assert answer["used_tokens"] == cl100k_tokens(text(result))
    assert all("ranges" not in item for item in answer["items"])
    assert "bounds" not in answer
    legacy = json.loads(
        text(await client.raw("reconstruct", {"agent_id": "a", "query": "billing", "lite": True}))
    )
    assert (legacy["mode"], legacy["items"]) == ("lite", answer["items"])


async def test_20_a_long_records_matching_passages_past_its_start_are_quoted(
    client: Agent,
) -> None:
    filler = "The weather was mild and the team met for coffee in the morning. "
    text_ = (
        filler * 14
        + "The zanzibar ledger migration moved every invoice to the new cluster. "
        + filler * 6
        + "Afterwards the zanzibar ledger was frozen for audit. "
        + filler * 6
    ).strip()
    assert text_.index("zanzibar") > 800
    mem = await _memory(client, text_)
    answer = await _reconstruct(client, "zanzibar ledger")
    (item,) = answer["items"]
    assert item["head_ref"] == f"mem:{mem}"
    assert item["content_len"] == len(text_)
    assert "The zanzibar ledger migration moved every invoice" in item["content"]
    assert len(item["ranges"]) > 1
    assert " \u2026 " in item["content"]
    assert len(item["content"]) <= 800
    shown = " \u2026 ".join(text_[start:end] for start, end in item["ranges"])
    assert item["content"] == shown


async def test_a_modes_token_count_includes_the_boundarys_notes(client: Agent) -> None:
    await _memory(client, "billing runs on postgres")
    result = await client.raw(
        "reconstruct",
        {"agent_id": "a", "query": "billing", "mode": "lite", "project_id": "@auto"},
    )
    answer = json.loads(text(result))
    assert answer["resolved_project_id"] == "@auto"  # no operating context: passed through
    assert list(answer)[-3:] == ["mode", "cap", "used_tokens"]
    assert answer["used_tokens"] == cl100k_tokens(text(result))


async def test_the_walk_reads_only_records_in_the_calls_scope(client: Agent) -> None:
    stored = [
        await client.call("store", agent_id="a", channel=channel, message={"content": content})
        for channel, content in (
            ("c1", "the ledger uses jsonb columns"),
            ("c2", "Aurora is the managed cluster"),
        )
    ]
    hit, other = (int(s["id"]) for s in stored)
    for anchor, name in ((hit, "Ledger"), (other, "Aurora")):
        await client.call(
            "declare_associations",
            agent_id="a",
            anchor_ref=f"mem:{anchor}",
            associations={"entities": [{"name": name}]},
        )
    await client.call(
        "declare_associations",
        agent_id="a",
        associations={"relations": [{"subject": "Aurora", "predicate": "r", "object": "Ledger"}]},
    )
    everywhere = await _reconstruct(client, "jsonb")
    assert f"mem:{other}" in [c["ref"] for c in everywhere["items"][0]["claims"]]
    scoped = await _reconstruct(client, "jsonb", channel="c1")
    assert [item["head_ref"] for item in scoped["items"]] == [f"mem:{hit}"]
    assert f"mem:{other}" not in str(scoped)
    foreign = await _reconstruct(client, "jsonb", agent="b")
    assert foreign["items"] == []
