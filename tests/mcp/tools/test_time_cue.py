"""recall's ``time_cue`` over MCP/HTTP (docs/tools.md, "Time cues"): the period, the
confidence margins, the one widening, the ignored cue, the refusals, the bounded lift and
the held seats, and that a cue never removes a row (acceptance 35-41 of issue 32's tier).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from service.config import Settings
from service.memory.library import Library
from tests.e2e.test_embedder_faults import fault_settings
from tests.servers.embedding import EmbeddingServer, running_server
from tests.support import Agent, new_tenant, serve, text

MARCH = {"after": "2026-03-01", "before": "2026-03-31"}


@pytest.fixture
async def rrf_client(lib: Library, settings: Settings, database_url: str) -> AsyncIterator[Agent]:
    """A service in the spec's rrf mode, whose small-pool gate refuses a lone match."""
    async with serve(dataclasses.replace(settings, recall_mode="rrf"), database_url) as served:
        yield Agent(served, await new_tenant(lib, "acme-rrf"))


@pytest.fixture(scope="module")
def embedder() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=384)


@pytest.fixture
async def vector_client(
    lib: Library, settings: Settings, database_url: str, embedder: EmbeddingServer
) -> AsyncIterator[Agent]:
    """A service with a (deterministic, hashed) embedder of 384 dimensions."""
    embedder.reset()
    async with serve(fault_settings(settings, embedder), database_url) as served:
        yield Agent(served, await new_tenant(lib, "acme-vectors"))


async def _store(client: Agent, content: str, stamp: str, agent: str = "a") -> str:
    body = await client.call(
        "store", agent_id=agent, message={"content": content, "timestamp": stamp}
    )
    assert body["result"] == "stored", body
    return f"mem:{body['id']}"


async def _recall(client: Agent, query: str, **args: Any) -> dict[str, Any]:
    body: dict[str, Any] = await client.call(
        "recall", agent_id=args.pop("agent_id", "a"), query=query, **args
    )
    return body


async def test_a_sure_march_cue_searches_the_whole_of_march(client: Agent) -> None:
    """Acceptance 35: dates name whole UTC days; ``before`` includes its day."""
    await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    body = await _recall(client, "tea", time_cue={**MARCH, "confidence": "sure"})
    assert body["time_cue"] == {
        "policy": "cued-v0.3",
        "period": ["2026-03-01T00:00:00+00:00", "2026-04-01T00:00:00+00:00"],
        "confidence": "sure",
        "revised": False,
        "moved": 0,
        "seated": 0,
    }
    assert [m["content"] for m in body["messages"]] == ["tea ceremony notes"]


async def test_a_likely_cue_widens_by_half_the_period_on_each_side(client: Agent) -> None:
    """Acceptance 36."""
    await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    body = await _recall(client, "tea", time_cue={**MARCH, "confidence": "likely"})
    assert body["time_cue"]["period"] == [
        "2026-02-13T12:00:00+00:00",
        "2026-04-16T12:00:00+00:00",
    ]
    assert (body["time_cue"]["confidence"], body["time_cue"]["revised"]) == ("likely", False)


async def test_an_empty_period_is_widened_once_one_step(client: Agent) -> None:
    """Acceptance 37: January 2025 holds nothing; the cue widens to likely, once."""
    await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    january = {"after": "2025-01-01", "before": "2025-01-31", "confidence": "sure"}
    body = await _recall(client, "tea", time_cue=january)
    assert body["time_cue"] == {
        "policy": "cued-v0.3",
        "period": ["2024-12-16T12:00:00+00:00", "2025-02-16T12:00:00+00:00"],
        "confidence": "likely",
        "revised": True,
        "moved": 0,
        "seated": 0,
    }


async def test_a_vague_cue_over_an_empty_period_cannot_widen(client: Agent) -> None:
    await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    january = {"after": "2025-01-01", "before": "2025-01-31", "confidence": "vague"}
    body = await _recall(client, "tea", time_cue=january)
    assert (body["time_cue"]["confidence"], body["time_cue"]["revised"]) == ("vague", False)


async def test_a_cue_for_today_is_ignored_and_changes_nothing(client: Agent) -> None:
    """Acceptance 38."""
    for i in range(4):
        await _store(client, f"tea note {i}", f"2026-03-1{i}T10:00:00Z")
    today = datetime.now(UTC).date().isoformat()
    plain = await _recall(client, "tea")
    cued = await _recall(client, "tea", time_cue={"after": today, "confidence": "sure"})
    assert cued["time_cue"]["ignored"] == "recent_only"
    assert cued["time_cue"]["policy"] == "cued-v0.3"
    assert cued["time_cue"]["period"][0] == f"{today}T00:00:00+00:00"
    assert cued["messages"] == plain["messages"]


@pytest.mark.parametrize(
    ("cue", "error"),
    [
        (
            {"confidence": "sure"},
            "time_cue needs either after/before or ago, not both and not neither",
        ),
        (
            {"after": "2026-03-01", "ago": "long_ago", "confidence": "sure"},
            "time_cue needs either after/before or ago, not both and not neither",
        ),
        (
            {"after": "bad", "confidence": "sure"},
            "time_cue.after is not a date or timestamp: 'bad'",
        ),
        (
            {"after": "2026-03-05", "before": "2026-03-05T00:00:00Z", "confidence": "likely"},
            "time_cue.before must be later than time_cue.after",
        ),
        (
            {"after": "2026-03-05T10:00:00", "before": "2026-03-04", "confidence": "sure"},
            "time_cue.before must be later than time_cue.after",
        ),
    ],
)
async def test_a_cue_that_cannot_be_read_is_a_tool_failure_with_no_messages(
    client: Agent, cue: dict[str, Any], error: str
) -> None:
    """Acceptance 39 (the handler's failures)."""
    await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    body = await _recall(client, "tea", time_cue=cue)
    assert body == {"ok": False, "error": error, "messages": []}


@pytest.mark.parametrize(
    ("cue", "error"),
    [
        ({}, "'confidence' is a required property"),
        (
            {"after": "2026-03-01", "confidence": "sure", "x": 1},
            "Additional properties are not allowed ('x' was unexpected)",
        ),
        ({"after": "2026-03-01", "confidence": "certain"}, None),
        ({"after": "x" * 257, "confidence": "sure"}, None),
    ],
)
async def test_a_cue_outside_its_schema_is_a_validation_error(
    client: Agent, cue: dict[str, Any], error: str | None
) -> None:
    """Acceptance 39 (the schema's): ``{}``, an extra key, a bad confidence, a long bound."""
    result = await client.raw("recall", {"agent_id": "a", "query": "tea", "time_cue": cue})
    assert result.is_error
    assert text(result).startswith("Input validation error: ")
    if error is not None:
        assert text(result) == f"Input validation error: {error}"


async def test_a_period_row_the_limit_cut_takes_a_held_seat(client: Agent) -> None:
    """Acceptance 40: a March memory past the ``limit`` is seated at the head of
    ``messages`` with the cue's reservation reason; the window rows are unchanged."""
    for i in range(5):
        await _store(client, f"green tea tasting {i}", f"2026-06-0{i + 1}T10:00:00Z")
    march = await _store(client, "tea in the garden", "2026-03-10T10:00:00Z")
    plain = await _recall(client, "green tea", limit=3)
    assert march not in [m["ref"] for m in plain["messages"]]
    body = await _recall(client, "green tea", limit=3, time_cue={**MARCH, "confidence": "sure"})
    seat = body["messages"][0]
    assert seat["ref"] == march
    assert seat["match_reason"] == {"signal": "cue", "admission": "reservation", "cue_rank": 0}
    assert body["time_cue"]["seated"] == 1
    assert body["messages"][1:] == plain["messages"]


async def test_an_empty_query_seats_the_period_newest_past_the_limit(client: Agent) -> None:
    march = await _store(client, "a note from march", "2026-03-10T10:00:00Z")
    for i in range(4):
        await _store(client, f"later note {i}", f"2026-06-0{i + 1}T10:00:00Z")
    body = await _recall(client, "", limit=2, time_cue={**MARCH, "confidence": "sure"})
    assert body["messages"][0]["ref"] == march
    assert body["time_cue"]["seated"] == 1


async def test_a_returned_row_the_cue_found_moves_up_and_carries_its_cue_rank(
    client: Agent,
) -> None:
    """The bounded lift: the March row moves toward the best end (the end of
    ``messages``) by at most 3 places, and says its rank on the cue arm."""
    march = await _store(client, "tea", "2026-03-10T10:00:00Z")
    for i in range(5):
        await _store(client, f"green tea and green tea leaves {i}", f"2026-06-0{i + 1}T10:00:00Z")
    plain = [m["ref"] for m in (await _recall(client, "green tea"))["messages"]]
    body = await _recall(client, "green tea", time_cue={**MARCH, "confidence": "sure"})
    cued = [m["ref"] for m in body["messages"]]
    assert sorted(cued) == sorted(plain)
    before, after = plain.index(march), cued.index(march)
    assert 0 < after - before <= 3
    assert body["time_cue"]["moved"] >= 1
    row = body["messages"][after]
    assert row["match_reason"]["cue_rank"] == 0
    others_plain = [r for r in plain if r != march]
    others_cued = [r for r in cued if r != march]
    assert others_plain == others_cued


async def test_a_seat_is_never_credited_to_recall_statistics(
    lib: Library, database_url: str
) -> None:
    """Confidence scoring credits the returned window; a held seat earns nothing."""
    async with serve(Settings(confidence_enabled=True), database_url) as served:
        client = Agent(served, await new_tenant(lib, "conf"))
        for i in range(5):
            await _store(client, f"green tea tasting {i}", f"2026-06-0{i + 1}T10:00:00Z")
        march = await _store(client, "tea in the garden", "2026-03-10T10:00:00Z")
        body = await _recall(client, "green tea", limit=3, time_cue={**MARCH, "confidence": "sure"})
        assert body["messages"][0]["ref"] == march
        assert body["messages"][0]["match_reason"]["signal"] == "cue"
        async with lib.db.admin_tx() as conn:
            records = await conn.fetch("SELECT 'mem:' || id AS ref, recall_count FROM memories")
        counts: dict[str, int] = {r["ref"]: r["recall_count"] for r in records}
        assert counts[march] == 0
        assert sum(counts.values()) == len(body["messages"]) - 1


async def test_with_embeddings_the_cue_arm_reuses_the_query_vector(
    vector_client: Agent, embedder: EmbeddingServer
) -> None:
    """The cue arm's vector list runs on the ordinary arm's query vector: the query is
    embedded once, and the period's row nearest that vector (the same text: cosine 1)
    ranks first on the cue arm."""
    client = vector_client
    for i in range(3):
        await _store(client, f"june note {i}", f"2026-06-0{i + 1}T10:00:00Z")
    march = await _store(client, "quartz lantern", "2026-03-10T10:00:00Z")
    embedder.reset()
    body = await _recall(client, "quartz lantern", time_cue={**MARCH, "confidence": "sure"})
    assert embedder.received == ["quartz lantern"]
    best = body["messages"][-1]
    assert best["ref"] == march
    assert best["match_reason"]["cue_rank"] == 0
    assert body["time_cue"]["revised"] is False


async def test_a_row_the_gate_refused_is_never_seated(rrf_client: Agent) -> None:
    """rrf's small-pool gate refuses a lone match; the cue arm finds it, but a refused
    row does not come back as a seat."""
    client = rrf_client
    await _store(client, "the pelican flew", "2026-03-10T10:00:00Z")
    await _store(client, "unrelated words", "2026-03-11T10:00:00Z")
    body = await _recall(client, "pelican", time_cue={**MARCH, "confidence": "sure"})
    assert body["messages"] == []
    assert body["time_cue"]["seated"] == 0


async def test_the_cue_keeps_the_recall_isolation(client: Agent) -> None:
    """Another agent's and another project's rows in the period are never seated."""
    await _store(client, "tea from another agent", "2026-03-10T10:00:00Z", agent="b")
    body = await client.call(
        "store",
        agent_id="a",
        project_id="P",
        message={"content": "tea in project P", "timestamp": "2026-03-10T10:00:00Z"},
    )
    assert body["result"] == "stored"
    got = await _recall(client, "tea", project_id="Q", time_cue={**MARCH, "confidence": "sure"})
    assert got["messages"] == []
    assert got["time_cue"]["seated"] == 0


async def test_excluded_texts_are_not_seated(client: Agent) -> None:
    for i in range(5):
        await _store(client, f"green tea tasting {i}", f"2026-06-0{i + 1}T10:00:00Z")
    await _store(client, "tea in the garden", "2026-03-10T10:00:00Z")
    body = await _recall(
        client,
        "green tea",
        limit=3,
        exclude_contents=["tea in the garden"],
        time_cue={**MARCH, "confidence": "sure"},
    )
    assert "tea in the garden" not in [m["content"] for m in body["messages"]]


async def test_a_cue_with_ago_and_long_ago(client: Agent) -> None:
    await _store(client, "tea from long ago", "2020-01-10T10:00:00Z")
    await _store(client, "tea from last year", "2025-06-10T10:00:00Z")
    await _store(client, "tea now", datetime.now(UTC).isoformat())
    body = await _recall(client, "tea", time_cue={"ago": "long_ago", "confidence": "sure"})
    assert body["time_cue"]["period"][0] == "2020-01-10T10:00:00+00:00"
    months = {"ago": {"unit": "months", "value": 9}, "confidence": "vague"}
    body = await _recall(client, "tea", time_cue=months)
    assert body["time_cue"]["confidence"] == "vague"
    assert len(body["time_cue"]["period"]) == 2


WORDS = ["tea", "garden", "river", "stone", "lamp"]
MONTHS = [f"2026-{m:02d}-{d:02d}T10:00:00Z" for m in (1, 3, 5, 7) for d in (3, 17)]
CUES = st.sampled_from(
    [
        {**MARCH, "confidence": "sure"},
        {**MARCH, "confidence": "vague"},
        {"after": "2026-05-01", "confidence": "likely"},
        {"before": "2026-02-01", "confidence": "sure"},
        {"ago": "long_ago", "confidence": "sure"},
        {"after": "2025-01-01", "before": "2025-01-31", "confidence": "sure"},
    ]
)
ROWS = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.sampled_from(MONTHS)),
    min_size=1,
    max_size=8,
)
_AGENTS = itertools.count()


@hypothesis_settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=ROWS,
    query=st.sampled_from(["", *WORDS, "tea river"]),
    cue=CUES,
    limit=st.integers(1, 6),
)
async def test_a_cue_never_removes_a_row(
    client: Agent,
    rows: list[tuple[list[str], str]],
    query: str,
    cue: dict[str, Any],
    limit: int,
) -> None:
    """Acceptance 41, over random data: the rows that are not seats are the same with and
    without a cue (only their order and the held seats may differ)."""
    agent = f"h{next(_AGENTS)}"
    for n, (words, stamp) in enumerate(rows):
        await _store(client, f"{' '.join(words)} {n}", stamp, agent=agent)
    plain = await _recall(client, query, agent_id=agent, limit=limit)
    cued = await _recall(client, query, agent_id=agent, limit=limit, time_cue=cue)

    def window(body: dict[str, Any]) -> list[str]:
        reasons = [m.get("match_reason", {}) for m in body["messages"]]
        return sorted(
            m["ref"]
            for m, reason in zip(body["messages"], reasons, strict=True)
            if reason.get("admission") != "reservation"
        )

    assert window(cued) == window(plain)
    seats = len(cued["messages"]) - len(plain["messages"])
    assert seats == cued["time_cue"].get("seated", 0) <= 3


@pytest.mark.parametrize(
    "cue",
    [
        {"after": "0001-01-01", "before": "9999-12-31", "confidence": "vague"},
        {"before": "0001-01-02", "confidence": "likely"},
        {"ago": {"unit": "months", "value": 10**30}, "confidence": "vague"},
        {"after": "2026-03-01T00:00:00.123456-09:30", "confidence": "likely"},
    ],
)
async def test_periods_at_the_ends_of_time_are_answered_never_a_failure(
    client: Agent, cue: dict[str, Any]
) -> None:
    await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    body = await _recall(client, "tea", time_cue=cue)
    assert "error" not in body
    assert body["time_cue"]["policy"] == "cued-v0.3"


async def test_no_widening_past_the_time_limit(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """``CPERSONA_RECALL_CUE_TIME_LIMIT_MS`` bounds the widening; 0 never widens."""
    never = dataclasses.replace(settings, recall_cue_time_limit_ms=0)
    async with serve(never, database_url) as served:
        client = Agent(served, await new_tenant(lib, "no-widening"))
        await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
        january = {"after": "2025-01-01", "before": "2025-01-31", "confidence": "sure"}
        body = await _recall(client, "tea", time_cue=january)
    assert body["time_cue"]["period"] == ["2025-01-01T00:00:00+00:00", "2025-02-01T00:00:00+00:00"]
    assert (body["time_cue"]["confidence"], body["time_cue"]["revised"]) == ("sure", False)


async def test_reconstruct_applies_the_cue_to_its_candidate_recall_and_copies_the_report(
    client: Agent,
) -> None:
    """reconstruct forwards ``time_cue`` to its candidate recall and copies the recall's
    ``time_cue`` object; an unreadable cue is its tool failure with no items."""
    march = await _store(client, "tea ceremony notes", "2026-03-10T10:00:00Z")
    body = await client.call(
        "reconstruct", agent_id="a", query="tea", time_cue={**MARCH, "confidence": "sure"}
    )
    assert body["time_cue"]["period"] == ["2026-03-01T00:00:00+00:00", "2026-04-01T00:00:00+00:00"]
    assert [item["head_ref"] for item in body["items"]] == [march]
    plain = await client.call("reconstruct", agent_id="a", query="tea")
    assert "time_cue" not in plain
    failed = await client.call(
        "reconstruct", agent_id="a", query="tea", time_cue={"confidence": "sure"}
    )
    assert failed["ok"] is False
    assert failed["items"] == []
    assert failed["returned_count"] == 0
    assert "either after/before or ago" in failed["error"]
