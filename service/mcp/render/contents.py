"""get_contents on the wire (docs/tools.md, "Batch budget"; docs/tools.md, "Refs")."""

from __future__ import annotations

from service.mcp.render.recall import EPISODE_SOURCE, fact, memory_item
from service.memory.contents import ContentItem, ContentsResult, EpisodeItem, ItemRange
from service.models import JsonObject


def item_range(found: ItemRange) -> JsonObject:
    """``{span, content_len, passage?, of?}``: what a range object served."""
    body: JsonObject = {"span": list(found.span), "content_len": found.content_len}
    if found.passages is not None:
        body["passage"] = list(found.passages)
        body["of"] = found.of
    return body


def item(found: ContentItem) -> JsonObject:
    """One item, shaped like a recall message so a caller can splice it in (a range
    object's slice also says which ``range`` it is); an episode also says whether it is
    ``resolved``."""
    body = _whole(found)
    if found.range is not None:
        body["range"] = item_range(found.range)
    return body


def _whole(found: ContentItem) -> JsonObject:
    if isinstance(found, EpisodeItem):
        body: JsonObject = {
            "ref": found.ref,
            "content": found.content,
            "source": dict(EPISODE_SOURCE),
            "timestamp": found.timestamp,
            "resolved": found.resolved,
        }
        if found.fact is not None:
            body.update(fact(found.fact))
        return body
    return memory_item(found)


def contents(result: ContentsResult, budget_chars: int) -> JsonObject:
    """``{items, missing, count}`` (no ``ok``: docs/tools.md, "Answers and failures"), with
    ``unresolved`` when a range could not be served, and ``deferred`` and the
    ``budget_chars`` that deferred them when the budget put refs off."""
    body: JsonObject = {
        "items": [item(found) for found in result.items],
        "missing": list(result.missing),
        "count": len(result.items),
    }
    if result.unresolved:
        body["unresolved"] = [{"ref": ref, "reason": why} for ref, why in result.unresolved]
    if result.deferred:
        body["deferred"] = list(result.deferred)
        body["budget_chars"] = budget_chars
    return body
