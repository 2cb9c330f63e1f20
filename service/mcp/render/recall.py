"""recall and recall_with_context on the wire (docs/tools.md, "Recall rows").

The library answers rows best first (``service.memory.recall.records``); shaping, the
budget, the ledger and the cursor keep that order, and :func:`answer` reverses the rows
exactly once into the wire order, ascending (best, or newest, last). Key order is the
JSON order: the MCP end-to-end suites compare answers byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from service.mcp.shaping.compact import compact_reason, compact_source
from service.mcp.shaping.rows import Shaped
from service.memory.contents import EpisodeItem, MemoryItem
from service.memory.recall.confidence import Confidence
from service.memory.recall.cue import POLICY, iso
from service.memory.recall.records import (
    Advisory,
    CueIgnored,
    CueReport,
    Echo,
    FilterOnly,
    Recalled,
    RecallResult,
    Speaker,
)
from service.memory.supersession import Fact, ref_text
from service.models import JsonObject

Row: TypeAlias = Recalled | Echo | MemoryItem | EpisodeItem
"""A row a recall answer can carry: ranked, echoed, or resumed from a cursor by ref."""

EPISODE_SOURCE: JsonObject = {"System": "episode"}


def row(item: Row) -> JsonObject:
    """One message in its full form, every key the library's row carries (for in-process
    readers and tests); a tool answer sends the compact form, :func:`shaped`, whose keys
    come in this order."""
    if isinstance(item, Recalled):
        return _recalled(item)
    if isinstance(item, Echo):
        return _echo(item)
    if isinstance(item, MemoryItem):
        return memory_item(item)
    return episode_item(item)


def _recalled(item: Recalled) -> JsonObject:
    body = _recalled_fields(item, item.content, item.source)
    if item.match_reason is not None:
        body["match_reason"] = dict(item.match_reason)
    return body


def _recalled_fields(item: Recalled, content: str, source: object | None) -> JsonObject:
    """A ranked row's keys in wire order up to its confidence: ``source`` when given (the
    compact form leaves out an uninformative one), the others when the row has them."""
    body: JsonObject = {"content": content}
    if item.ref:
        body["ref"] = item.ref
    if source is not None:
        body["source"] = source
    if item.timestamp:
        body["timestamp"] = item.timestamp
    if item.msg_id:
        body["id"] = item.msg_id
    if item.confidence is not None:
        body["confidence"] = confidence(item.confidence)
    if item.fact is not None:
        body.update(fact(item.fact))
    return body


def fact(found: Fact) -> JsonObject:
    """A chained row's ``valid_from``, ``valid_to`` (when superseded), ``supersedes``
    (refs, when it replaces any) and ``superseded_by`` (docs/tools.md, "Facts that change")."""
    body: JsonObject = {"valid_from": found.valid_from.isoformat()}
    if found.valid_to is not None:
        body["valid_to"] = found.valid_to.isoformat()
    if found.supersedes:
        body["supersedes"] = [ref_text(ref) for ref in found.supersedes]
    if found.superseded_by is not None:
        body["superseded_by"] = ref_text(found.superseded_by)
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
    if item.fact is not None:
        body.update(fact(item.fact))
    return body


def episode_item(item: EpisodeItem) -> JsonObject:
    """A whole episode by ref, as a recall answer carries it (no ``resolved``)."""
    return {
        "ref": item.ref,
        "content": item.content,
        "source": dict(EPISODE_SOURCE),
        "timestamp": item.timestamp,
    }


def shaped(item: Shaped) -> JsonObject:
    """One message in its compact wire form (docs/tools.md, "Recall rows"), straight from
    its shaped record: the full form's keys in the same order, empty values and a source
    that says nothing omitted, ``match_reason`` floats at four significant digits
    (``service.mcp.shaping.compact``), then ``content_truncated`` and ``content_len`` when
    the content was cut, and ``excerpt`` and ``excerpt_offset`` when it has one."""
    found = item.row
    content = item.content
    if isinstance(found, Recalled):
        body = _compact_recalled(found, content)
    elif isinstance(found, Echo):
        body = _compact_echo(found, content)
    else:
        body = _compact_item(found, content)
    if item.shown is not None:
        body["content_truncated"] = True
        body["content_len"] = len(found.content)
    if item.excerpt is not None:
        body["excerpt"] = item.excerpt.text
        body["excerpt_offset"] = item.excerpt.offset
    return body


def _compact_recalled(item: Recalled, content: str) -> JsonObject:
    body = _recalled_fields(item, content, compact_source(item.source, item.ref))
    if item.match_reason is not None:
        cosine = item.confidence.cosine if item.confidence is not None else None
        reason = compact_reason(item.match_reason, cosine)
        if reason:
            body["match_reason"] = reason
    return body


def _compact_echo(item: Echo, content: str) -> JsonObject:
    body: JsonObject = {"content": content}
    _put_source(body, _speaker(item.source), None)
    if item.timestamp:
        body["timestamp"] = item.timestamp
    body["context_type"] = "conversation"
    return body


def _compact_item(item: MemoryItem | EpisodeItem, content: str) -> JsonObject:
    """A row resumed by ref: a memory keeps its source and ``id``; an episode's fixed
    source is omitted (its ``ep:`` ref says it)."""
    body: JsonObject = {"ref": item.ref, "content": content} if item.ref else {"content": content}
    if isinstance(item, MemoryItem):
        _put_source(body, item.source, item.ref)
        if item.timestamp:
            body["timestamp"] = item.timestamp
        if item.msg_id:
            body["id"] = item.msg_id
        return body
    _put_source(body, EPISODE_SOURCE, item.ref)
    if item.timestamp:
        body["timestamp"] = item.timestamp
    return body


def _put_source(body: JsonObject, source: JsonObject, ref: str | None) -> None:
    kept = compact_source(source, ref)
    if kept is not None:
        body["source"] = kept


def stub(ref: str) -> JsonObject:
    """What a row already delivered whole in this session comes back as."""
    return {"ref": ref, "seen": True}


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


def time_cue(report: CueReport) -> JsonObject:
    """The ``time_cue`` object of a cued recall (docs/tools.md, "Time cues")."""
    if isinstance(report, CueIgnored):
        return {"policy": POLICY, "ignored": report.reason, "period": iso(report.period)}
    return {
        "policy": POLICY,
        "period": None if report.period is None else iso(report.period),
        "confidence": report.confidence,
        "revised": report.revised,
        "moved": report.moved,
        "seated": report.seated,
    }


def envelope(result: RecallResult) -> JsonObject:
    """The keys after ``messages``, in wire order: ``context_filter_only``,
    ``gate_fallback``, ``time_cue``, ``advisory`` (each only when it says something)."""
    body: JsonObject = {}
    if result.context_filter_only is not None:
        body["context_filter_only"] = _filter_only(result.context_filter_only)
    if result.gate_fallback:
        body["gate_fallback"] = True
    if result.time_cue is not None:
        body["time_cue"] = time_cue(result.time_cue)
    if result.advisory is not None:
        body["advisory"] = advisory(result.advisory)
    return body


def head(envelope: JsonObject, spent_budget: int | None) -> JsonObject:
    """The keys after ``messages`` known before paging: the envelope, then
    ``full_content_budget_chars`` when the full-content budget was spent
    (docs/tools.md, "Full-content budget")."""
    if spent_budget is None:
        return envelope
    return {**envelope, "full_content_budget_chars": spent_budget}


def answer(
    best_first: Sequence[JsonObject],
    head: JsonObject,
    next_cursor: str | None = None,
    missing: Sequence[str] = (),
) -> JsonObject:
    """The answer: ``messages`` in wire order (the one reversal of the rows), the ``head``,
    then ``next_cursor`` when the token budget left rows out and ``missing`` when a
    resumed ref no longer resolves."""
    body: JsonObject = {"messages": list(reversed(best_first)), **head}
    if next_cursor is not None:
        body["next_cursor"] = next_cursor
    if missing:
        body["missing"] = list(missing)
    return body
