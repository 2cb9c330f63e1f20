"""The read family's seam (docs/architecture.md): the library answers recall, get_contents
and the listings in typed records, never wire dicts, and recall_with_context orders its
rows best (newest) first exactly as the reverse of the wire's stable ascending merge.

The first two tests read the source (no import of a module under test is needed to say
what a public function is annotated to return); the last is a property of the merge.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from hypothesis import given, settings, strategies as st

from service.memory import contents, episodes
from service.memory.memories import listing
from service.memory.recall import records, scoring, with_context

SERVICE = Path(__file__).resolve().parents[2] / "service"
READ_FAMILY = {
    "memory/recall/pipeline.py": ("recall",),
    "memory/recall/with_context.py": ("recall_with_context", "echoes"),
    "memory/recall/scoring.py": ("ranked_body",),
    "memory/recall/hits.py": ("message",),
    "memory/recall/advisory.py": ("advisory",),
    "memory/contents.py": ("resolve", "get_contents", "checked_request"),
    "memory/memories/listing.py": ("list_memories",),
    "memory/episodes.py": ("list_episodes",),
}
UNTYPED = ("JsonObject", "dict", "Dict", "Any")


def _returns(path: Path) -> dict[str, str]:
    """Each top-level function of a module with its return annotation as written."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: ast.unparse(node.returns) if node.returns is not None else ""
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_no_public_function_of_the_read_family_returns_a_dict() -> None:
    untyped = []
    for module, names in READ_FAMILY.items():
        returns = _returns(SERVICE / module)
        for name in names:
            annotation = returns[name]
            if not annotation or any(word in annotation for word in UNTYPED):
                untyped.append(f"{module}:{name} -> {annotation or '(none)'}")
    assert untyped == []


def test_the_read_records_are_frozen_and_slotted() -> None:
    kinds = [
        records.Recalled,
        records.Echo,
        records.Speaker,
        records.Advisory,
        records.FilterOnly,
        records.RecallResult,
        scoring.RankedRows,
        contents.MemoryItem,
        contents.EpisodeItem,
        contents.ContentsResult,
        listing.ListedMemory,
        episodes.ListedEpisode,
    ]
    loose = [
        kind.__name__
        for kind in kinds
        if not dataclasses.is_dataclass(kind)
        or not kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
        or "__slots__" not in kind.__dict__
    ]
    assert loose == []


def _recalled(row_id: int, stamp: str) -> records.Recalled:
    return records.Recalled("mem", row_id, f"mem:{row_id}", "x", {}, stamp, "", None, None)


STAMPS = st.sampled_from(["", "2024-01-01", "2024-01-02", "2024-01-03"])


@settings(database=None, deadline=None, max_examples=200)
@given(recalled=st.lists(STAMPS, max_size=6), turns=st.lists(STAMPS, max_size=6))
def test_the_merge_is_the_reverse_of_the_wire_merge(recalled: list[str], turns: list[str]) -> None:
    """The wire merges the recalled rows (best last) and the turns with a stable ascending
    sort by timestamp; the library's newest-first order must be exactly its reverse, ties
    included, so that rendering's one reversal gives the wire its order."""
    best_first = [_recalled(n + 1, stamp) for n, stamp in enumerate(recalled)]
    echoes = [
        records.Echo(f"turn {n}", records.Speaker("Agent", "self"), stamp)
        for n, stamp in enumerate(turns)
    ]
    merged: list[records.RecallRow] = [*reversed(best_first), *echoes]
    wire = sorted(merged, key=lambda row: row.timestamp)
    assert list(with_context.newest_first(best_first, echoes)) == wire[::-1]
