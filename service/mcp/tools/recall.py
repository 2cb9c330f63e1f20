"""recall and recall_with_context: the library's full rows, shaped and delivered here."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from service.config import Settings
from service.mcp import delivery
from service.mcp.registry import Handler, ToolEnv, ToolSpec, informing, obj, on_agent, refuse_with
from service.mcp.schemas import (
    AGENT_ID,
    AS_OF,
    CHANNEL,
    CURRENT_ONLY,
    PROJECT_ID,
    identifier,
    name,
    string,
)
from service.memory import bounds
from service.memory.cursor import MAX_CURSOR_CHARS
from service.memory.recall import cue, pipeline, with_context
from service.models import JsonObject

_COMMON: JsonObject = {
    "agent_id": AGENT_ID,
    "query": string(bounds.QUERY_CHARS, description="'' = most recent"),
    "limit": {
        "type": "integer",
        "default": pipeline.DEFAULT_LIMIT,
        "minimum": 0,
        "maximum": 100,
    },
    "deep": {
        "type": "boolean",
        "default": False,
        "description": "wider, noisier",
    },
    "channel": CHANNEL,
    "project_id": PROJECT_ID,
    "source_id": identifier(default="", description="source.id prefix"),
    "full_content": {
        "type": "boolean",
        "default": False,
        "description": "whole rows, no previews",
    },
    "max_tokens": {
        "type": "integer",
        "minimum": 1,
        "maximum": 1_000_000,
        "description": "token budget; then next_cursor",
    },
    "cursor": {
        "type": "string",
        "maxLength": MAX_CURSOR_CHARS,
        "description": "a next_cursor: next page",
    },
    "novel_only": {
        "type": "boolean",
        "description": "stub rows seen whole",
    },
}

RECALL_DESCRIPTION = """Search memories and episodes by meaning and words before answering
from past sessions. Returns {messages}, last is best: content, ref
(mem:N/ep:N), source, timestamp. Long rows are previews
(content_truncated, maybe an excerpt): get_contents fetches them."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RecallParams:
    """What both recall tools take."""

    agent_id: str
    query: str
    limit: int
    deep: bool
    channel: str
    project_id: str | None = None
    source_id: str
    full_content: bool
    max_tokens: int | None = None
    cursor: str | None = None
    novel_only: bool | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlainRecallParams(RecallParams):
    exclude_contents: tuple[str, ...]
    as_of: str = ""
    current_only: bool
    time_cue: JsonObject | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RecallWithContextParams(RecallParams):
    external_context: tuple[object, ...]  # turns; entries that are not objects are ignored


def _request(
    env: ToolEnv, params: RecallParams, exclude_contents: tuple[str, ...] = ()
) -> pipeline.RecallRequest:
    """The library request of both recall tools (recall_with_context has no
    ``exclude_contents``: its exclusions come from ``external_context``)."""
    return pipeline.RecallRequest(
        agent_id=params.agent_id,
        query=params.query,
        limit=params.limit,
        deep=params.deep,
        channel=params.channel,
        exclude_contents=exclude_contents,
        project_id=params.project_id,
        source_id=params.source_id,
        paused=env.paused,
    )


def _options(tool: str, params: RecallParams) -> delivery.Options:
    return delivery.Options(
        tool=tool,
        agent_id=params.agent_id,
        query=params.query,
        full_content=params.full_content,
        max_tokens=params.max_tokens,
        novel_only=params.novel_only,
    )


def _credits_statistics(env: ToolEnv, params: RecallParams) -> bool:
    """Recall itself never writes unless confidence scoring bumps recall statistics,
    which a persistence pause suppresses (docs/tools.md, "pause_persistence"); only then is the
    pause read."""
    return env.lib.settings.confidence_enabled


def _scores_confidence(settings: Settings) -> bool:
    """Confidence scoring credits recall statistics and demotes rows recalled minutes
    ago: such recalls write and read their own writes, on the primary."""
    return settings.confidence_enabled


async def _recall(env: ToolEnv, params: PlainRecallParams) -> JsonObject:
    opts = _options("recall", params)
    if params.cursor:
        return await delivery.resume(env, opts, params.cursor)
    request = dataclasses.replace(
        _request(env, params, params.exclude_contents),
        as_of=params.as_of,
        current_only=params.current_only,
    )
    if params.time_cue is not None:
        request = dataclasses.replace(request, time_cue=cue.parse(params.time_cue))
    body = await pipeline.recall(env.lib, env.caller.tenant_id, request)
    return await delivery.deliver(env, opts, body)


R = TypeVar("R", bound=RecallParams)


def _recall_tool(
    name: str, description: str, params: type[R], handler: Handler[R], extra: JsonObject
) -> ToolSpec[R]:
    """The spec of one of the two recall tools: they differ only in their name, text,
    handler and the one array parameter each adds to the common ones (what the caller
    already holds: ``exclude_contents`` or ``external_context``)."""
    return ToolSpec(
        name=name,
        description=description,
        input_schema=obj({**_COMMON, **extra}, ["agent_id", "query"]),
        params=params,
        handler=handler,
        demands=on_agent("agent_id", "read"),
        read_only=True,
        project_gate=True,
        refusal=refuse_with(messages=[]),
        pause=informing(_credits_statistics),
        primary_when=_scores_confidence,
    )


TIME_CUE: JsonObject = {
    "type": "object",
    "description": "only when the request says when: that period's rows move up, a few seated",
    "properties": {
        "after": name(description="YYYY-MM-DD or ISO time"),
        "before": name(),
        "ago": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "unit": {"enum": list(cue.UNITS)},
                        "value": {"type": "integer", "minimum": 0},
                    },
                    "required": ["unit", "value"],
                    "additionalProperties": False,
                },
                {"enum": ["long_ago"]},
            ]
        },
        "confidence": {"enum": list(cue.CONFIDENCES)},
    },
    "required": ["confidence"],
    "additionalProperties": False,
}
"""``recall``'s ``time_cue`` (docs/tools.md, "Time cues"): after/before, or ago, and a
confidence; read by ``cue.parse``."""

RECALL = _recall_tool(
    "recall",
    RECALL_DESCRIPTION,
    PlainRecallParams,
    _recall,
    {
        "exclude_contents": {
            "type": "array",
            "items": string(bounds.QUERY_CHARS),
            "maxItems": bounds.LIST_ITEMS,
            "default": [],
            "description": "texts you hold (left out)",
        },
        "as_of": AS_OF,
        "current_only": CURRENT_ONLY,
        "time_cue": TIME_CUE,
    },
)

TURN: JsonObject = {"content": {"maxLength": bounds.QUERY_CHARS}}
"""A turn of ``external_context``: its content is bounded like a query (entries that are
not objects are ignored by the library as before; it also bounds a turn's short strings,
``with_context.TURN_NAMES``, whose schema the catalogue's budget leaves out)."""

RECALL_WITH_CONTEXT_DESCRIPTION = """recall merged with your recent turns (external_context),
oldest first; memories matching a turn are left out, turns come back as "conversation"
rows."""


async def _recall_with_context(env: ToolEnv, params: RecallWithContextParams) -> JsonObject:
    opts = _options("recall_with_context", params)
    if params.cursor:
        return await delivery.resume(env, opts, params.cursor)
    body = await with_context.recall_with_context(
        env.lib, env.caller.tenant_id, _request(env, params), params.external_context
    )
    return await delivery.deliver(env, opts, body)


RECALL_WITH_CONTEXT = _recall_tool(
    "recall_with_context",
    RECALL_WITH_CONTEXT_DESCRIPTION,
    RecallWithContextParams,
    _recall_with_context,
    {
        "external_context": {
            "type": "array",
            "items": {"properties": TURN},
            "maxItems": bounds.LIST_ITEMS,
            "default": [],
            "description": "your turns [{role, content}]",
        },
    },
)

TOOLS = [RECALL, RECALL_WITH_CONTEXT]
