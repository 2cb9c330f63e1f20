"""recall and recall_with_context on the wire (docs/tools.md, "Recall rows").

The library answers rows best first (``service.memory.recall.records``); shaping, the
budget, the ledger and the cursor keep that order, and :func:`answer` reverses the rows
exactly once into the wire order, ascending (best, or newest, last). Key order is the
JSON order: the MCP end-to-end suites compare answers byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from service.memory.contents import EpisodeItem, MemoryItem
from service.memory.recall.confidence import Confidence
from service.memory.recall.records import (
    Advisory,
    Echo,
    FilterOnly,
    Recalled,
    RecallResult,
    Speaker,
)
from service.models import JsonObject

Row: TypeAlias = Recalled | Echo | MemoryItem | EpisodeItem
"""A row a recall answer can carry: ranked, echoed, or resumed from a cursor by ref."""

EPISODE_SOURCE: JsonObject = {"System": "episode"}


def row(item: Row) -> JsonObject:
    """One message in its full (library) form, before shaping: what compact rows, previews
    and excerpts start from."""
    if isinstance(item, Recalled):
        return _recalled(item)
    if isinstance(item, Echo):
        return _echo(item)
    if isinstance(item, MemoryItem):
        return memory_item(item)
    return episode_item(item)


def _recalled(item: Recalled) -> JsonObject:
    body: JsonObject = {"content": item.content}
    if item.ref is not None:
        body["ref"] = item.ref
    body["source"] = item.source
    if item.timestamp:
        body["timestamp"] = item.timestamp
    if item.msg_id:
        body["id"] = item.msg_id
    if item.confidence is not None:
        body["confidence"] = confidence(item.confidence)
    if item.match_reason is not None:
        body["match_reason"] = dict(item.match_reason)
    return body


def confidence(score: Confidence) -> JsonObject:
    """A row's ``confidence``: optional keys appear only when true or known."""
    info: JsonObject = {"age_hours": score.age_hours, "score": score.score}
    if score.age_unknown:
        info["age_unknown"] = True
    if score.resolved:
        info["resolved"] = True
    if score.cosine is not None:
        info["cosine"] = score.cosine
    return info


def _speaker(source: Speaker) -> JsonObject:
    body: JsonObject = {"type": source.type, "id": source.id}
    if source.name is not None:
        body["name"] = source.name
    return body


def _echo(item: Echo) -> JsonObject:
    return {
        "content": item.content,
        "source": _speaker(item.source),
        "timestamp": item.timestamp,
        "context_type": "conversation",
    }


def memory_item(item: MemoryItem) -> JsonObject:
    """A whole memory by ref, spliceable into a recall answer."""
    body: JsonObject = {"ref": item.ref, "content": item.content, "source": item.source}
    if item.timestamp:
        body["timestamp"] = item.timestamp
    if item.msg_id:
        body["id"] = item.msg_id
    return body


def episode_item(item: EpisodeItem) -> JsonObject:
    """A whole episode by ref, as a recall answer carries it (no ``resolved``)."""
    return {
        "ref": item.ref,
        "content": item.content,
        "source": dict(EPISODE_SOURCE),
        "timestamp": item.timestamp,
    }


def advisory(notice: Advisory) -> JsonObject:
    """The ``advisory`` object of a degraded recall (docs/tools.md, "Degraded advisory")."""
    return {
        "degraded": True,
        "severity": notice.severity,
        "reason": notice.reason,
        "evidence": notice.evidence,
        "runbook": notice.runbook,
    }


def _filter_only(note: FilterOnly) -> JsonObject:
    return {"roles": list(note.roles), "note": note.note}


def envelope(result: RecallResult) -> JsonObject:
    """The keys after ``messages``, in wire order: ``context_filter_only``,
    ``gate_fallback``, ``advisory`` (each only when it says something)."""
    body: JsonObject = {}
    if result.context_filter_only is not None:
        body["context_filter_only"] = _filter_only(result.context_filter_only)
    if result.gate_fallback:
        body["gate_fallback"] = True
    if result.advisory is not None:
        body["advisory"] = advisory(result.advisory)
    return body


def answer(best_first: Sequence[JsonObject], *parts: JsonObject) -> JsonObject:
    """The answer: ``messages`` in wire order (the one reversal of the rows), then the
    envelope and delivery keys in the order given."""
    body: JsonObject = {"messages": list(reversed(best_first))}
    for part in parts:
        body.update(part)
    return body
