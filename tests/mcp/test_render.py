"""``service.mcp.render``: the wire keys, their order and their omissions for the read
family's records (JSON object order is dict order; the end-to-end suites pin the bytes)."""

from __future__ import annotations

from datetime import UTC, datetime

from service.db.episodes import EpisodeListRow
from service.mcp.render import contents, listing, recall
from service.memory.contents import ContentsResult, EpisodeItem, MemoryItem
from service.memory.memories.listing import ListedMemory
from service.memory.recall.confidence import Confidence
from service.memory.recall.records import (
    Advisory,
    Echo,
    FilterOnly,
    Recalled,
    RecallResult,
    Speaker,
)

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def recalled(**changes: object) -> Recalled:
    fields: dict[str, object] = {
        "kind": "mem",
        "id": 7,
        "ref": "mem:7",
        "content": "c",
        "source": {"type": "User"},
        "timestamp": "2026-01-01",
        "msg_id": "m1",
        "confidence": Confidence(age_hours=1.0, score=0.5, cosine=0.9),
        "match_reason": {"signal": "rrf", "score": 0.1, "rrf": 0.1},
    }
    fields.update(changes)
    return Recalled(**fields)  # type: ignore[arg-type]


def test_a_recalled_row_has_every_key_in_wire_order() -> None:
    assert list(recall.row(recalled())) == [
        "content",
        "ref",
        "source",
        "timestamp",
        "id",
        "confidence",
        "match_reason",
    ]
    assert recall.row(recalled())["confidence"] == {"age_hours": 1.0, "score": 0.5, "cosine": 0.9}


def test_a_recalled_row_omits_what_it_lacks_but_keeps_an_empty_source() -> None:
    bare = recalled(ref=None, kind="profile", timestamp="", msg_id="", confidence=None)
    assert recall.row(bare) == {
        "content": "c",
        "source": {"type": "User"},
        "match_reason": {"signal": "rrf", "score": 0.1, "rrf": 0.1},
    }


def test_echoes_name_the_user_but_not_the_agent() -> None:
    user = Echo("hi", Speaker("User", "discord:u", "Ann"), "")
    agent = Echo("yo", Speaker("Agent", "self"), "2026")
    assert recall.row(user) == {
        "content": "hi",
        "source": {"type": "User", "id": "discord:u", "name": "Ann"},
        "timestamp": "",
        "context_type": "conversation",
    }
    assert recall.row(agent)["source"] == {"type": "Agent", "id": "self"}


def test_the_answer_reverses_the_rows_once_and_follows_with_the_envelope() -> None:
    result = RecallResult(
        rows=(),
        gate_fallback=True,
        advisory=Advisory("hint", "r", "e", "rb"),
        context_filter_only=FilterOnly(("system",), "n"),
    )
    head = recall.head(recall.envelope(result), 200_000)
    body = recall.answer([{"n": 1}, {"n": 2}], head, "x", ["mem:9"])
    assert list(body) == [
        "messages",
        "context_filter_only",
        "gate_fallback",
        "advisory",
        "full_content_budget_chars",
        "next_cursor",
        "missing",
    ]
    assert (body["next_cursor"], body["missing"]) == ("x", ["mem:9"])
    assert body["messages"] == [{"n": 2}, {"n": 1}]
    assert body["advisory"] == {
        "degraded": True,
        "severity": "hint",
        "reason": "r",
        "evidence": "e",
        "runbook": "rb",
    }
    assert recall.envelope(RecallResult(rows=())) == {}
    assert recall.answer([], recall.head({}, None)) == {"messages": []}


def test_resumed_items_lead_with_their_ref_and_episodes_drop_resolved() -> None:
    memory = MemoryItem("mem:1", 1, "c", {}, "", "")
    episode = EpisodeItem("ep:2", 2, "[Episode] s", "2026", True)
    assert recall.row(memory) == {"ref": "mem:1", "content": "c", "source": {}}
    assert recall.row(episode) == {
        "ref": "ep:2",
        "content": "[Episode] s",
        "source": {"System": "episode"},
        "timestamp": "2026",
    }
    assert contents.item(episode)["resolved"] is True


def test_contents_name_the_budget_only_when_it_deferred_refs() -> None:
    found = ContentsResult((MemoryItem("mem:1", 1, "c", {}, "t", "m"),), ("bad",))
    assert contents.contents(found, 40_000) == {
        "items": [{"ref": "mem:1", "content": "c", "source": {}, "timestamp": "t", "id": "m"}],
        "missing": ["bad"],
        "count": 1,
    }
    deferred = ContentsResult((), (), ("mem:2",))
    assert list(contents.contents(deferred, 9)) == [
        "items",
        "missing",
        "count",
        "deferred",
        "budget_chars",
    ]


def test_listed_rows_keep_every_column_in_wire_order() -> None:
    memory = ListedMemory(1, "a", "p", "c", {}, "t", WHEN, False, "ch")
    assert listing.memory(memory) == {
        "id": 1,
        "agent_id": "a",
        "project_id": "p",
        "content": "c",
        "source": {},
        "timestamp": "t",
        "created_at": WHEN.isoformat(),
        "locked": False,
        "channel": "ch",
    }
    episode = EpisodeListRow(2, "a", "p", "s", "k", None, None, WHEN)
    assert list(listing.episode(episode)) == [
        "id",
        "agent_id",
        "project_id",
        "summary",
        "keywords",
        "start_time",
        "end_time",
        "created_at",
    ]


def test_a_listing_page_names_its_budget_only_when_it_trimmed() -> None:
    rows: list[dict[str, object]] = [{"id": 1}]
    assert listing.page("memories", rows, False, 10) == {"memories": [{"id": 1}], "count": 1}
    assert list(listing.page("episodes", rows, True, 10)) == ["episodes", "count", "budget_chars"]
