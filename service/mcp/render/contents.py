"""get_contents on the wire (docs/tools.md, "Batch budget"; docs/tools.md, "Refs")."""

from __future__ import annotations

from service.mcp.render.recall import EPISODE_SOURCE, fact, memory_item
from service.memory.contents import ContentItem, ContentsResult, EpisodeItem
from service.models import JsonObject


def item(found: ContentItem) -> JsonObject:
    """One whole item, shaped like a recall message so a caller can splice it in; an
    episode also says whether it is ``resolved``."""
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
    ``deferred`` and the ``budget_chars`` that deferred them when the budget put refs off."""
    body: JsonObject = {
        "items": [item(found) for found in result.items],
        "missing": list(result.missing),
        "count": len(result.items),
    }
    if result.deferred:
        body["deferred"] = list(result.deferred)
        body["budget_chars"] = budget_chars
    return body
