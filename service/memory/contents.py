"""get_contents: resolve ``mem:<id>`` / ``ep:<id>`` refs back to whole rows
(docs/tools.md, "Batch budget"; docs/tools.md, "Refs").

The library returns every found row whole and applies no character budget: the
40,000-character batch budget, ``deferred`` and ``budget_chars`` belong to the MCP boundary
(``service.mcp.shaping.budget_contents``), so in-process callers always get full rows.

Reads are id-keyed with the ownership predicate: a row resolves only for the agent that
owns it, in the caller's tenant, with no project or channel filter. Everything else (a
malformed ref, another agent's or tenant's row, a ref of the wrong kind, a deleted row)
lands in ``missing`` with no hint why, and one bad ref never aborts the batch. Memories and
episodes are fetched in one statement, each table with its own id list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias

from service.db import contents
from service.db.supersession import Ref
from service.errors import InvalidInput
from service.memory import bounds, supersession
from service.memory.library import Library
from service.memory.supersession import Fact
from service.models import JsonObject, TenantId

Kind: TypeAlias = Literal["mem", "ep"]


@dataclasses.dataclass(frozen=True, slots=True)
class ItemRange:
    """What a range object served (docs/tools.md, "get_contents ranges"): ``span`` in the
    stored text (clamped to it), the text's ``content_len``, and for a passage range the
    inclusive ``passages`` and how many current passages the record has (``of``)."""

    span: tuple[int, int]
    content_len: int
    passages: tuple[int, int] | None = None
    of: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryItem:
    """A whole memory, shaped like a recalled row so a caller can splice it in
    (docs/tools.md, "Recall rows"): ``source`` is ``{}`` when none, ``timestamp`` and
    ``msg_id`` ``""`` when none."""

    ref: str
    id: int
    content: str
    source: JsonObject
    timestamp: str
    msg_id: str
    fact: Fact | None = None
    """Only for a record in a supersession chain (docs/tools.md, "Facts that change")."""
    range: ItemRange | None = None
    """Only for a range object: ``content`` is then the range's slice."""

    @property
    def ref_key(self) -> tuple[str, int]:
        return ("mem", self.id)


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeItem:
    """A whole episode: ``content`` is ``[Episode] <summary>``, timestamped like recall
    does (``start_time``, else ``created_at``)."""

    ref: str
    id: int
    content: str
    timestamp: str
    resolved: bool
    fact: Fact | None = None
    """Only for a record in a supersession chain (docs/tools.md, "Facts that change")."""
    range: ItemRange | None = None
    """Only for a range object: ``content`` is then the range's slice of the summary."""

    @property
    def ref_key(self) -> tuple[str, int]:
        return ("ep", self.id)


ContentItem: TypeAlias = MemoryItem | EpisodeItem
Resolved: TypeAlias = list[tuple[str, ContentItem | None]]


@dataclasses.dataclass(frozen=True, slots=True)
class ContentsResult:
    """A get_contents answer: the items found and the refs missing, both in request order;
    ``deferred`` holds the refs a batch budget put off (the library applies none)."""

    items: tuple[ContentItem, ...]
    missing: tuple[str, ...]
    deferred: tuple[object, ...] = ()
    """The refs put off, each as sent (a string or a range object)."""
    unresolved: tuple[tuple[str, str], ...] = ()
    """``(ref, reason)`` of each range that cannot be served exactly."""


MAX_REFS: Final = 20
"""A full row is worth ~800 tokens; a larger batch would reopen the hole previews close."""

MAX_REF_CHARS: Final = 40
"""Longer ref strings are malformed before ``int()`` ever sees them."""

MAX_ROW_ID: Final = 2**63 - 1
"""Largest id a row can have (Postgres ``bigint``); a larger ref names no row."""

AGENT_REQUIRED: Final = "agent_id is required"
REFS_REQUIRED: Final = "refs must be a non-empty list of 'mem:<id>' / 'ep:<id>' strings"
_KINDS: Final[dict[str, Kind]] = {"mem": "mem", "ep": "ep"}


def checked_request(agent_id: object, refs: object) -> tuple[str, Sequence[object]]:
    """The agent and refs of a get_contents call, or InvalidInput (the spec's three refusals).

    Over MCP the schema already rejects more than 20 refs; this check protects library
    callers, who get the same tool-failure text.
    """
    if not isinstance(agent_id, str) or not agent_id:
        raise InvalidInput(AGENT_REQUIRED)
    if not isinstance(refs, list | tuple) or not refs:
        raise InvalidInput(REFS_REQUIRED)
    if len(refs) > MAX_REFS:
        raise InvalidInput(f"too many refs ({len(refs)}; max {MAX_REFS}) — split the fetch")
    bounds.check_texts("refs", refs, bounds.QUERY_CHARS)  # a malformed one is echoed in missing
    for index, ref in enumerate(refs):
        if isinstance(ref, Mapping):  # a range object (service.memory.ranges)
            bounds.check_text(f"refs/{index}/ref", ref.get("ref"), bounds.QUERY_CHARS)
            bounds.check_text(f"refs/{index}/revision", ref.get("revision"), bounds.QUERY_CHARS)
    return agent_id, refs


def parse_ref(ref: object) -> tuple[Kind, int] | None:
    """``(kind, id)`` of a ref, or ``None`` when it is malformed.

    The one ref grammar (the boundary formats refs with ``shaping.rows.format_ref``):
    split at the first ``:``, the kind exactly ``mem`` or ``ep``, the rest an ``int()``
    (whitespace, sign and leading zeros tolerated, no ``_`` separators) in
    ``1..MAX_ROW_ID``; non-strings and strings over 40 characters are malformed.
    """
    if not isinstance(ref, str) or len(ref) > MAX_REF_CHARS:
        return None
    prefix, _, number = ref.partition(":")
    kind = _KINDS.get(prefix)
    if kind is None or "_" in number:
        return None
    try:
        row_id = int(number)
    except ValueError:
        return None
    return (kind, row_id) if 0 < row_id <= MAX_ROW_ID else None


async def get_contents(
    lib: Library, tenant_id: TenantId, agent_id: object, refs: object
) -> ContentsResult:
    """Every found item whole (no batch budget), items and missing refs in request order;
    InvalidInput for an empty ``agent_id``, a ``refs`` that is not a non-empty list,
    or more than 20 refs.
    """
    agent, wanted = checked_request(agent_id, refs)
    resolved = await resolve(lib, tenant_id, agent, wanted)
    items = tuple(item for _, item in resolved if item is not None)
    missing = tuple(ref for ref, item in resolved if item is None)
    return ContentsResult(items, missing)


async def _with_facts(
    lib: Library, tenant_id: TenantId, agent: str, items: tuple[ContentItem, ...]
) -> tuple[ContentItem, ...]:
    """The items, those in a supersession chain with their ``fact``: one batched lookup
    (a second only when a chain is found), so a client can walk the chain by ref."""
    refs: list[Ref] = [("mem" if isinstance(i, MemoryItem) else "ep", i.id) for i in items]
    if not refs:
        return items
    async with lib.db.tenant_tx(tenant_id) as conn:
        facts = await supersession.read_facts(conn, tenant_id, agent, refs, always=False)
    chained = {ref: fact for ref, fact in facts.items() if fact.chained}
    return tuple(
        dataclasses.replace(item, fact=chained[ref]) if ref in chained else item
        for ref, item in zip(refs, items, strict=True)
    )


async def resolve(
    lib: Library, tenant_id: TenantId, agent_id: str, refs: Sequence[object]
) -> Resolved:
    """Every ref in request order with its whole item, or ``None`` when it is missing.

    The ref is echoed as sent (``str()`` of a non-string), so a caller can match answers to
    its request. Duplicates are resolved independently. No query runs when no ref parses.
    """
    parsed = [(ref if isinstance(ref, str) else str(ref), parse_ref(ref)) for ref in refs]
    wanted: dict[Kind, set[int]] = {"mem": set(), "ep": set()}
    for _, key in parsed:
        if key is not None:
            wanted[key[0]].add(key[1])
    found = contents.Contents(memories={}, episodes={})
    if wanted["mem"] or wanted["ep"]:
        async with lib.db.tenant_tx(tenant_id) as conn:
            found = await contents.get_contents(
                conn, tenant_id, agent_id, sorted(wanted["mem"]), sorted(wanted["ep"])
            )
    resolved = [(ref, _item(ref, key, found)) for ref, key in parsed]
    items = tuple(item for _, item in resolved if item is not None)
    if not items:
        return resolved
    with_facts = iter(await _with_facts(lib, tenant_id, agent_id, items))
    return [(ref, None if item is None else next(with_facts)) for ref, item in resolved]


def _item(ref: str, key: tuple[Kind, int] | None, found: contents.Contents) -> ContentItem | None:
    if key is None:
        return None
    kind, row_id = key
    if kind == "mem":
        memory = found.memories.get(row_id)
        return None if memory is None else _memory_item(ref, memory)
    episode = found.episodes.get(row_id)
    return None if episode is None else _episode_item(ref, episode)


def _memory_item(ref: str, row: contents.MemoryContent) -> MemoryItem:
    source = row.source if isinstance(row.source, dict) else {}
    return MemoryItem(ref, row.id, row.content, source, row.timestamp_text, row.msg_id)


def _episode_item(ref: str, row: contents.EpisodeContent) -> EpisodeItem:
    stamp = row.start_time or row.created_at.isoformat()
    return EpisodeItem(ref, row.id, f"[Episode] {row.summary}", stamp, bool(row.resolved))
