"""Unit tests for ``service.mcp.shaping``: previews, refs and response budgets.

Numbers in test docstrings are the acceptance behaviours of the CPersona reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import cast

import pytest
from hypothesis import given, settings, strategies as st

from service.mcp.render import (
    contents as render_contents,
    listing as render_listing,
    recall as render_recall,
)
from service.mcp.shaping import contents, listing, recall, rows
from service.mcp.shaping.rows import RecallRow
from service.memory import contents as library_contents
from service.memory.episodes import ListedEpisode
from service.memory.memories.listing import ListedMemory
from service.memory.recall.records import Recalled
from service.models import JsonObject
from tests.mcp.shaping.rows import echo, mem, profile, whole, wire as compact_wire, wires

# No example database: property tests must not leave files in the checkout.
PROPERTY = settings(database=None, deadline=None, max_examples=200)


def text(n: int) -> str:
    """A non-periodic text of exactly ``n`` code points, so an off-by-k cut shows."""
    return " ".join(str(i) for i in range(n))[:n]


def texts_of(rows: Sequence[Mapping[str, object]]) -> list[object]:
    return [row["content"] for row in rows]


# -- preview (docs/tools.md, "Preview tier") -------------------------------------------------------


def test_preview_cuts_a_1479_char_row_to_its_first_500_chars_with_markers() -> None:
    """36."""
    full = text(1479)
    (row,) = recall.preview([mem(1, full)], 500)
    assert row.shown == 500
    assert compact_wire(row) == {
        "ref": "mem:1",
        "content": full[:500],
        "content_truncated": True,
        "content_len": 1479,
    }


def test_preview_leaves_an_exactly_500_char_row_without_markers() -> None:
    """37."""
    rows = [mem(1, text(500))]
    shaped = recall.preview(rows, 500)
    assert [row.shown for row in shaped] == [None]
    assert wires(shaped) == whole(rows)
    assert whole(rows) == [{"ref": "mem:1", "content": text(500)}]


def test_preview_is_a_pure_prefix_with_no_ellipsis() -> None:
    (row,) = recall.preview([mem(1, "abcdefghijklmnop")], 10)
    assert row.content == "abcdefghij"
    assert compact_wire(row)["content"] == "abcdefghij"


@pytest.mark.parametrize("cap", [0, -1])
def test_preview_disabled_returns_full_text_without_markers(cap: int) -> None:
    """38 (preview half)."""
    rows = [mem(1, text(5000))]
    assert wires(recall.preview(rows, cap)) == whole(rows)


@pytest.mark.parametrize(
    "row",
    [
        profile("[Profile] " + text(800)),
        mem(1, text(800), ref=""),
        mem(1, text(800), ref=None),
    ],
)
def test_preview_never_trims_a_row_without_a_ref(row: Recalled) -> None:
    """The profile row has no handle back to its full text."""
    shaped = recall.preview([row], 500)
    assert wires(shaped) == whole([row])
    assert shaped[0].whole


def test_conversation_echoes_are_trimmed_uniformly_without_a_ref() -> None:
    """The seed (which wins over spec item 45): echoes are trimmed like every row."""
    (row,) = recall.preview([echo(text(800))], 500)
    body = compact_wire(row)
    assert body["content"] == text(800)[:500]
    assert body["content_truncated"] is True
    assert body["content_len"] == 800
    assert "ref" not in body
    assert body["context_type"] == "conversation"


def test_preview_counts_code_points_not_utf16_units() -> None:
    (row,) = recall.preview([mem(1, "😀" * 600)], 500)
    body = compact_wire(row)
    assert body["content"] == "😀" * 500
    assert body["content_len"] == 600


def test_preview_leaves_empty_and_short_content_alone() -> None:
    """Typed rows always carry a string; an empty or short one is never cut."""
    rows = [mem(1, ""), mem(2, "1")]
    assert wires(recall.preview(rows, 1)) == whole(rows)


def test_preview_keeps_every_other_field_of_a_trimmed_row() -> None:
    source = {"type": "User", "id": "u1", "name": "U"}
    (row,) = recall.preview([mem(7, text(50), source=source, msg_id="m-7", timestamp="t")], 10)
    body = compact_wire(row)
    assert body["ref"] == "mem:7"
    assert body["source"] == source
    assert body["id"] == "m-7"
    assert body["timestamp"] == "t"


def test_preview_does_not_mutate_its_input() -> None:
    original = mem(1, text(50))
    shaped = recall.preview([original], 10)
    assert original == mem(1, text(50))
    assert shaped[0].row is original  # the library row is kept whole, never copied
    assert compact_wire(shaped[0]) is not compact_wire(shaped[0])


@PROPERTY
@given(content=st.text(), cap=st.integers(min_value=1, max_value=60))
def test_preview_is_always_a_prefix_no_longer_than_the_cap(content: str, cap: int) -> None:
    (row,) = wires(recall.preview([mem(1, content)], cap))
    trimmed = row["content"]
    assert isinstance(trimmed, str)
    assert content.startswith(trimmed)
    assert len(trimmed) == min(cap, len(content))
    assert ("content_truncated" in row) is (len(content) > cap)
    assert row.get("content_len", len(content)) == len(content)


# -- full-content budget (docs/tools.md, "Full-content budget") ------------------------------------


def full_content_budget(
    rows: Sequence[RecallRow],
    cap: int,
    budget_chars: int = recall.FULL_CONTENT_BUDGET_CHARS,
) -> tuple[list[JsonObject], bool]:
    """:func:`recall.spend_best_first` over rows these tests write in wire order (best last),
    rendered in wire order."""
    shaped, spent = recall.spend_best_first(rows[::-1], cap, budget_chars)
    return wires(shaped[::-1]), spent


def test_full_content_budget_keeps_every_row_whole_up_to_exactly_the_budget() -> None:
    """42: ten 20,000-character rows total exactly 200,000, which still fits."""
    rows = [mem(i, text(20_000)) for i in range(1, 11)]
    shaped, spent = full_content_budget(rows, 500)
    assert shaped == whole(rows)
    assert spent is False


def test_full_content_budget_previews_the_first_8_of_20_rows_of_16000_chars() -> None:
    """43."""
    full = text(16_000)
    shaped, spent = full_content_budget([mem(i, full) for i in range(1, 21)], 500)
    assert spent is True
    for row in shaped[:8]:
        assert row["content"] == full[:500]
        assert row["content_truncated"] is True
        assert row["content_len"] == 16_000
    for row in shaped[8:]:
        assert row["content"] == full
        assert "content_truncated" not in row
        assert "content_len" not in row


def test_full_content_budget_is_spent_from_the_tail() -> None:
    """44: budget 100, preview 10, rows of 60/60/60."""
    rows = [mem(1, "a" * 60), mem(2, "b" * 60), mem(3, "c" * 60)]
    shaped, spent = full_content_budget(rows, 10, budget_chars=100)
    assert spent is True
    assert shaped == [
        {"ref": "mem:1", "content": "a" * 10, "content_truncated": True, "content_len": 60},
        {"ref": "mem:2", "content": "b" * 10, "content_truncated": True, "content_len": 60},
        {"ref": "mem:3", "content": "c" * 60},
    ]


def test_full_content_budget_admits_the_last_row_whatever_its_size() -> None:
    rows = [mem(1, "h" * 60), mem(2, "g" * 500)]
    shaped, spent = full_content_budget(rows, 10, budget_chars=100)
    assert texts_of(shaped) == ["h" * 10, "g" * 500]
    assert spent is True


def test_full_content_budget_degrades_every_earlier_row_once_spent() -> None:
    """A small row before the overflowing one is degraded even though it would fit."""
    rows = [mem(1, "a" * 20), mem(2, "b" * 90), mem(3, "c" * 60)]
    shaped, _ = full_content_budget(rows, 10, budget_chars=100)
    assert texts_of(shaped) == ["a" * 10, "b" * 10, "c" * 60]


def test_full_content_budget_never_trims_refless_rows_but_counts_them() -> None:
    rows = [mem(1, "a" * 90), profile("[Profile] " + "p" * 200), mem(2, "b" * 60)]
    shaped, spent = full_content_budget(rows, 10, budget_chars=100)
    assert spent is True
    assert shaped == [
        {"ref": "mem:1", "content": "a" * 10, "content_truncated": True, "content_len": 90},
        *whole(rows[1:]),
    ]


def test_full_content_budget_can_be_spent_without_trimming_anything() -> None:
    rows = [mem(1, "x" * 5), mem(2, "y" * 99)]
    shaped, spent = full_content_budget(rows, 10, budget_chars=100)
    assert shaped == whole(rows)
    assert spent is True


def test_full_content_budget_counts_empty_content_as_nothing() -> None:
    """An empty best row makes no non-zero total: the oversized row after it is admitted
    whole as if it were first."""
    rows = [mem(1, "g" * 500), mem(2, "")]
    shaped, spent = full_content_budget(rows, 10, budget_chars=100)
    assert shaped == whole(rows)
    assert spent is False


@pytest.mark.parametrize("cap", [0, -5])
def test_full_content_budget_is_off_when_the_preview_tier_is_off(cap: int) -> None:
    """38 (budget half)."""
    rows = [mem(1, "a" * 300), mem(2, "b" * 300)]
    shaped, spent = full_content_budget(rows, cap, budget_chars=100)
    assert shaped == whole(rows)
    assert spent is False


def test_full_content_budget_of_no_rows_is_not_spent() -> None:
    assert full_content_budget([], 10) == ([], False)


def test_full_content_budget_does_not_mutate_its_input() -> None:
    rows = [mem(1, "a" * 60), mem(2, "b" * 60)]
    full_content_budget(rows, 10, budget_chars=100)
    assert rows == [mem(1, "a" * 60), mem(2, "b" * 60)]


def overflows_from_the_tail(sizes: list[int], i: int, budget: int) -> bool:
    """The full-content budget in closed form: row ``i`` would push a non-zero total over the
    budget."""
    return sum(sizes[i + 1 :]) > 0 and sum(sizes[i:]) > budget


@PROPERTY
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=120), max_size=12),
    refless=st.sets(st.integers(min_value=0, max_value=11)),
    cap=st.integers(min_value=1, max_value=40),
    budget=st.integers(min_value=1, max_value=400),
)
def test_full_content_budget_degrades_exactly_the_rows_at_or_before_the_overflow(
    sizes: list[int], refless: set[int], cap: int, budget: int
) -> None:
    rows = [
        mem(i + 1, "z" * n, ref=None) if i in refless else mem(i + 1, "z" * n)
        for i, n in enumerate(sizes)
    ]
    shaped, spent = full_content_budget(rows, cap, budget_chars=budget)
    overflow = [overflows_from_the_tail(sizes, i, budget) for i in range(len(sizes))]
    assert spent is any(overflow)
    assert len(shaped) == len(rows)
    for i, (before, after) in enumerate(zip(whole(rows), shaped, strict=True)):
        if any(overflow[i:]) and i not in refless and sizes[i] > cap:
            assert after == {
                **before,
                "content": "z" * cap,
                "content_truncated": True,
                "content_len": sizes[i],
            }
        else:
            assert after == before
    if rows:
        assert shaped[-1] == whole(rows)[-1]


# -- shape_rows and the answer (docs/tools.md, "Where trimming happens") --------------------------


def shape_recall(
    messages: Sequence[RecallRow],
    envelope: JsonObject | None = None,
    *,
    preview_chars: int,
    full_content: bool,
    budget_chars: int = recall.FULL_CONTENT_BUDGET_CHARS,
) -> JsonObject:
    """The answer as delivery assembles it from ``messages`` written in wire order: the
    rows shaped best first, then rendered with the envelope and the spent budget."""
    rows, spent = recall.shape_rows(
        messages[::-1],
        preview_chars=preview_chars,
        full_content=full_content,
        budget_chars=budget_chars,
    )
    head = render_recall.head(envelope or {}, budget_chars if spent else None)
    return render_recall.answer(wires(rows), head)


def test_shape_recall_previews_by_default_and_keeps_other_keys() -> None:
    advisory = {"severity": "hint"}
    envelope: JsonObject = {"advisory": advisory, "gate_fallback": True}
    shaped = shape_recall([mem(1, text(700))], envelope, preview_chars=500, full_content=False)
    assert shaped["advisory"] is advisory
    assert shaped["gate_fallback"] is True
    assert shaped["messages"] == [
        {"ref": "mem:1", "content": text(700)[:500], "content_truncated": True, "content_len": 700}
    ]
    assert "full_content_budget_chars" not in shaped
    assert list(shaped) == ["messages", "advisory", "gate_fallback"]


def test_shape_recall_with_full_content_adds_the_budget_when_it_is_spent() -> None:
    """43 (response half): the marker carries the budget in force."""
    rows = [mem(i, text(16_000)) for i in range(1, 21)]
    shaped = shape_recall(rows, preview_chars=500, full_content=True)
    assert shaped["full_content_budget_chars"] == 200_000
    messages = shaped["messages"]
    assert isinstance(messages, list)
    assert [m.get("content_truncated", False) for m in messages] == [True] * 8 + [False] * 12
    assert [m["ref"] for m in messages] == [f"mem:{i}" for i in range(1, 21)]


def test_shape_recall_reports_a_spent_budget_even_when_no_row_was_trimmed() -> None:
    """The recall marker means "spent", not "trimmed" (docs/tools.md, "Full-content budget")."""
    rows = [mem(1, "x" * 5), mem(2, "y" * 99)]
    shaped = shape_recall(rows, preview_chars=10, full_content=True, budget_chars=100)
    assert shaped["full_content_budget_chars"] == 100
    assert shaped["messages"] == whole(rows)


def test_shape_recall_with_full_content_under_budget_returns_rows_whole() -> None:
    """42."""
    rows = [mem(1, text(1479)), mem(2, text(900))]
    shaped = shape_recall(rows, preview_chars=500, full_content=True)
    assert shaped == {"messages": whole(rows)}


@pytest.mark.parametrize("full_content", [False, True])
def test_shape_recall_with_preview_disabled_never_trims_or_marks(full_content: bool) -> None:
    """38."""
    rows = [mem(i, text(16_000)) for i in range(1, 21)]
    shaped = shape_recall(rows, preview_chars=0, full_content=full_content)
    assert shaped == {"messages": whole(rows)}


def test_shape_rows_does_not_mutate_its_rows() -> None:
    messages = [mem(1, "a" * 60), mem(2, "b" * 60)]
    recall.shape_rows(messages, preview_chars=10, full_content=True, budget_chars=100)
    assert messages == [mem(1, "a" * 60), mem(2, "b" * 60)]


# -- refs (docs/tools.md, "Batch budget"; docs/tools.md, "Refs") -----------------------------------


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("mem:1", ("mem", 1)),
        ("ep:45", ("ep", 45)),
        ("mem: 7 ", ("mem", 7)),
        ("mem:+3", ("mem", 3)),
        ("ep:0045", ("ep", 45)),
        ("mem:9223372036854775807", ("mem", 2**63 - 1)),
    ],
)
def test_parse_ref_accepts_what_int_accepts(ref: str, parsed: tuple[str, int]) -> None:
    assert library_contents.parse_ref(ref) == parsed


@pytest.mark.parametrize(
    "ref",
    [
        "bogus",
        "mem:abc",
        "mem:-1",
        "mem:0",
        "profile:1",
        "mem:",
        ":1",
        "mem",
        "MEM:1",
        " mem:1",
        "mem:1_000",
        "mem:1.5",
        "mem:0x10",
        "ep:1:2",
        "mem:9223372036854775808",
        "mem:" + "0" * 36 + "1",
        "",
    ],
)
def test_parse_ref_rejects_malformed_refs(ref: str) -> None:
    """49 (parser part)."""
    assert library_contents.parse_ref(ref) is None


@pytest.mark.parametrize("ref", [1, None, b"mem:1", ["mem:1"], True, {"ref": "mem:1"}])
def test_parse_ref_rejects_non_strings(ref: object) -> None:
    assert library_contents.parse_ref(ref) is None


def test_parse_ref_accepts_a_ref_of_exactly_40_chars() -> None:
    ref = "mem:" + "0" * 35 + "1"
    assert len(ref) == 40
    assert library_contents.parse_ref(ref) == ("mem", 1)


def test_format_ref_prefixes_the_kind() -> None:
    assert rows.format_ref("mem", 123) == "mem:123"
    assert rows.format_ref("ep", 45) == "ep:45"


@pytest.mark.parametrize("row_id", [0, -1, 2**63, True])
def test_format_ref_refuses_an_id_no_row_can_have(row_id: int) -> None:
    with pytest.raises(ValueError, match="no ref"):
        rows.format_ref("mem", row_id)


@PROPERTY
@given(kind=st.sampled_from(["mem", "ep"]), row_id=st.integers(1, 2**63 - 1))
def test_format_ref_round_trips_through_parse_ref(kind: rows.RefKind, row_id: int) -> None:
    assert library_contents.parse_ref(rows.format_ref(kind, row_id)) == (kind, row_id)


@PROPERTY
@given(ref=st.text(max_size=60))
def test_parse_ref_never_raises_and_only_yields_valid_refs(ref: str) -> None:
    parsed = library_contents.parse_ref(ref)
    if parsed is not None:
        kind, row_id = parsed
        assert ref.startswith(f"{kind}:")
        assert 0 < row_id <= library_contents.MAX_ROW_ID


# -- get_contents batch budget ------------------------------------------------------


def item(ref: str, size: int) -> library_contents.MemoryItem:
    return library_contents.MemoryItem(ref, 1, text(size), {"type": "User"}, "", "")


Found = list[tuple[str, library_contents.ContentItem | None]]


def answer(result: library_contents.ContentsResult, budget_chars: int = 40_000) -> object:
    """The wire answer of a budgeted batch."""
    return render_contents.contents(result, budget_chars)


def wire(ref: str, size: int) -> dict[str, object]:
    return {"ref": ref, "content": text(size), "source": {"type": "User"}}


def test_get_contents_budget_defers_the_rest_after_two_15000_char_rows() -> None:
    """50: the unresolvable ep:99 after them is deferred too, not missing."""
    refs = ["mem:1", "mem:2", "mem:3", "mem:4"]
    found: Found = [(r, item(r, 15_000)) for r in refs]
    found.append(("ep:99", None))
    result = contents.budget_contents(found)
    assert answer(result) == {
        "items": [wire("mem:1", 15_000), wire("mem:2", 15_000)],
        "missing": [],
        "count": 2,
        "deferred": ["mem:3", "mem:4", "ep:99"],
        "budget_chars": 40_000,
    }


def test_get_contents_returns_a_single_oversized_row_whole() -> None:
    """51."""
    result = contents.budget_contents([("mem:1", item("mem:1", 50_000))])
    assert answer(result) == {"items": [wire("mem:1", 50_000)], "missing": [], "count": 1}


def test_get_contents_files_unresolvable_refs_before_the_spend_under_missing() -> None:
    found: Found = [
        ("bogus", None),
        ("mem:1", item("mem:1", 50_000)),
        ("ep:2", None),
        ("mem:3", item("mem:3", 10)),
    ]
    result = contents.budget_contents(found)
    assert result.missing == ("bogus", "ep:2")
    assert result.items == (item("mem:1", 50_000),)
    assert result.deferred == ("mem:3",)


def test_get_contents_admits_an_item_that_reaches_the_budget_exactly() -> None:
    """The whole item is charged (CPersona 2.6): content plus its other fields."""
    overhead = contents.item_cost(item("mem:1", 0))
    assert overhead == len("mem:1") + len('{"type": "User"}')
    found: Found = [
        ("mem:1", item("mem:1", 25_000 - overhead)),
        ("mem:2", item("mem:2", 15_000 - overhead)),
    ]
    body = answer(contents.budget_contents(found))
    assert isinstance(body, dict)
    assert body["count"] == 2
    assert "deferred" not in body
    assert "budget_chars" not in body


def test_get_contents_processes_duplicated_refs_independently() -> None:
    small = item("mem:1", 10)
    assert contents.budget_contents([("mem:1", small), ("mem:1", small)]).items == (small,) * 2
    big = item("mem:1", 30_000)
    result = contents.budget_contents([("mem:1", big), ("mem:1", big)])
    assert len(result.items) == 1
    assert result.deferred == ("mem:1",)


def test_get_contents_of_only_unresolvable_refs_lists_them_missing() -> None:
    """48 (shape part): no ``ok`` key on a read."""
    result = contents.budget_contents([("mem:5", None)])
    assert answer(result) == {"items": [], "missing": ["mem:5"], "count": 0}


def test_get_contents_budget_can_be_lowered() -> None:
    found: Found = [
        ("mem:1", item("mem:1", 60)),
        ("mem:2", item("mem:2", 60)),
    ]
    result = contents.budget_contents(found, budget_chars=100)
    assert result.deferred == ("mem:2",)
    body = answer(result, 100)
    assert isinstance(body, dict)
    assert body["budget_chars"] == 100


def test_get_contents_items_are_fresh_wire_objects() -> None:
    original = item("mem:1", 10)
    body = answer(contents.budget_contents([("mem:1", original)]))
    assert isinstance(body, dict)
    assert body["items"] == [wire("mem:1", 10)]
    assert body["items"][0]["source"] == original.source


# -- list budgets (docs/tools.md, "List budgets") --------------------------------------------------

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def memory_row(row_id: object, size: int) -> ListedMemory:
    """A listed memory; ``row_id`` may be an id no stored row can have."""
    return ListedMemory(cast(int, row_id), "a", "p", text(size), {}, "", WHEN, False, "c")


def episode_row(row_id: int, summary: int, keywords: int) -> ListedEpisode:
    return ListedEpisode(row_id, "a", "p", text(summary), "k" * keywords, None, None, WHEN)


def memories(shaped: Sequence[listing.Listed[ListedMemory]]) -> list[JsonObject]:
    """The wire rows of a budgeted memory listing."""
    return [render_listing.memory(item.row, item.cut) for item in shaped]


def episodes(shaped: Sequence[listing.Listed[ListedEpisode]]) -> list[JsonObject]:
    return [render_listing.episode(item.row, item.cut) for item in shaped]


def budget_memories(
    rows: Sequence[ListedMemory], cap: int, **budget: int
) -> tuple[list[JsonObject], bool]:
    """:func:`listing.budget_list_memories`, rendered."""
    shaped, trimmed = listing.budget_list_memories(rows, cap, **budget)
    return memories(shaped), trimmed


def budget_episodes(
    rows: Sequence[ListedEpisode], cap: int, **budget: int
) -> tuple[list[JsonObject], bool]:
    shaped, trimmed = listing.budget_list_episodes(rows, cap, **budget)
    return episodes(shaped), trimmed


def listed(rows: Sequence[ListedMemory]) -> list[JsonObject]:
    """Memory rows on the wire, whole."""
    return [render_listing.memory(row) for row in rows]


def listed_episodes(rows: Sequence[ListedEpisode]) -> list[JsonObject]:
    return [render_listing.episode(row) for row in rows]


def test_list_memories_budget_leaves_a_listing_that_fits_untouched() -> None:
    rows = [memory_row(i, 30) for i in range(1, 4)]
    assert budget_memories(rows, 10, budget_chars=100) == (listed(rows), False)
    shaped, _ = listing.budget_list_memories(rows, 10, budget_chars=100)
    assert [item.cut for item in shaped] == [None] * 3


def test_list_memories_budget_degrades_from_the_first_overflow_to_the_end() -> None:
    rows = [memory_row(1, 60), memory_row(2, 30), memory_row(3, 60), memory_row(4, 60)]
    shaped, trimmed = budget_memories(rows, 10, budget_chars=100)
    assert trimmed is True
    assert shaped[:2] == listed(rows[:2])
    for row_id, row in ((3, shaped[2]), (4, shaped[3])):
        assert row == {
            **render_listing.memory(memory_row(row_id, 60)),
            "content": text(10),
            "content_len": 60,
            "content_truncated": True,
            "ref": f"mem:{row_id}",
        }
        assert list(row)[-3:] == ["content_truncated", "content_len", "ref"]


def test_list_memories_budget_keeps_an_oversized_first_row_whole() -> None:
    rows = [memory_row(1, 500), memory_row(2, 60)]
    shaped, trimmed = budget_memories(rows, 10, budget_chars=100)
    assert shaped[0] == listed(rows)[0]
    assert shaped[1]["content"] == text(10)
    assert trimmed is True


def test_list_memories_budget_reports_nothing_when_spent_rows_are_all_short() -> None:
    rows = [memory_row(1, 95), memory_row(2, 8), memory_row(3, 10)]
    shaped, trimmed = budget_memories(rows, 10, budget_chars=100)
    assert shaped == listed(rows)
    assert trimmed is False


def test_list_memories_budget_gives_a_ref_only_to_rows_it_trimmed() -> None:
    rows = [memory_row(1, 95), memory_row(2, 8), memory_row(3, 40)]
    shaped, _ = budget_memories(rows, 10, budget_chars=100)
    assert "ref" not in shaped[1]
    assert shaped[2]["ref"] == "mem:3"


@pytest.mark.parametrize("row_id", [None, "7", 0, True])
def test_list_memories_budget_never_trims_a_row_that_cannot_have_a_ref(row_id: object) -> None:
    rows = [memory_row(1, 95), memory_row(row_id, 40)]
    assert budget_memories(rows, 10, budget_chars=100) == (listed(rows), False)


@pytest.mark.parametrize("cap", [0, -1])
def test_list_budgets_are_off_when_the_preview_tier_is_off(cap: int) -> None:
    mems = [memory_row(1, 500), memory_row(2, 500)]
    eps = [episode_row(1, 500, 500), episode_row(2, 500, 500)]
    assert budget_memories(mems, cap, budget_chars=100) == (listed(mems), False)
    assert budget_episodes(eps, cap, budget_chars=100) == (listed_episodes(eps), False)


def test_list_memories_budget_defaults_to_one_million_chars() -> None:
    rows = [memory_row(1, 600_000), memory_row(2, 400_000), memory_row(3, 600)]
    shaped, trimmed = budget_memories(rows, 500)
    assert shaped[:2] == listed(rows[:2])
    assert shaped[2]["content_len"] == 600
    assert trimmed is True


def test_list_episodes_budget_counts_summary_and_keywords_together() -> None:
    rows = [episode_row(1, 40, 40), episode_row(2, 15, 5), episode_row(3, 30, 5)]
    shaped, trimmed = budget_episodes(rows, 10, budget_chars=100)
    assert trimmed is True
    assert shaped[:2] == listed_episodes(rows[:2])
    assert shaped[2] == {
        **render_listing.episode(rows[2]),
        "summary": text(10),
        "summary_len": 30,
        "summary_truncated": True,
        "keywords": "k" * 5,
        "ref": "ep:3",
    }


def test_list_episodes_budget_trims_each_long_field_with_its_own_markers() -> None:
    rows = [episode_row(1, 90, 0), episode_row(2, 20, 30)]
    shaped, _ = budget_episodes(rows, 10, budget_chars=100)
    assert shaped[1] == {
        **render_listing.episode(rows[1]),
        "summary": text(10),
        "summary_len": 20,
        "summary_truncated": True,
        "keywords": "k" * 10,
        "keywords_len": 30,
        "keywords_truncated": True,
        "ref": "ep:2",
    }
    assert list(shaped[1])[-5:] == [
        "summary_truncated",
        "summary_len",
        "keywords_truncated",
        "keywords_len",
        "ref",
    ]


def test_list_episodes_budget_defaults_to_eight_hundred_thousand_chars() -> None:
    rows = [episode_row(1, 400_000, 400_000), episode_row(2, 600, 0)]
    shaped, trimmed = budget_episodes(rows, 500)
    assert shaped[1]["summary_len"] == 600
    assert trimmed is True


def test_list_budgets_do_not_mutate_their_input() -> None:
    rows = [memory_row(1, 95), memory_row(2, 40)]
    shaped, _ = listing.budget_list_memories(rows, 10, budget_chars=100)
    assert rows == [memory_row(1, 95), memory_row(2, 40)]
    assert [item.row for item in shaped] == rows


@PROPERTY
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=80), max_size=12),
    cap=st.integers(min_value=1, max_value=30),
    budget=st.integers(min_value=1, max_value=300),
)
def test_list_budget_degrades_exactly_the_rows_from_the_first_overflow_on(
    sizes: list[int], cap: int, budget: int
) -> None:
    """The list budgets in closed form; rows are never dropped and the first is never cut."""
    rows = [memory_row(i, n) for i, n in enumerate(sizes, start=1)]
    shaped, trimmed = budget_memories(rows, cap, budget_chars=budget)
    overflow = [sum(sizes[:i]) > 0 and sum(sizes[: i + 1]) > budget for i in range(len(sizes))]
    assert len(shaped) == len(rows)
    expected_cut = [any(overflow[: i + 1]) and n > cap for i, n in enumerate(sizes)]
    for cut, before, after in zip(expected_cut, listed(rows), shaped, strict=True):
        if cut:
            assert after == {
                **before,
                "content": text(cap),
                "content_truncated": True,
                "content_len": len(str(before["content"])),
                "ref": f"mem:{before['id']}",
            }
        else:
            assert after == before
    assert trimmed is any(expected_cut)
    if rows:
        assert shaped[0] == listed(rows)[0]
