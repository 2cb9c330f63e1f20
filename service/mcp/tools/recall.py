"""recall and recall_with_context: the library's full rows, shaped to previews here."""

from __future__ import annotations

from service.config import Settings
from service.mcp.registry import ToolEnv, ToolSpec, informing, obj, on_agent, refuse_with
from service.mcp.schemas import AGENT_ID, CHANNEL, PROJECT_ID
from service.mcp.shaping import recall as shaping
from service.memory.recall import pipeline, with_context
from service.models import JsonObject

_COMMON: JsonObject = {
    "agent_id": AGENT_ID,
    "query": {
        "type": "string",
        "description": "What to look for, in natural language or exact words. Empty lists "
        "the most recent memories.",
    },
    "limit": {
        "type": "integer",
        "default": pipeline.DEFAULT_LIMIT,
        "minimum": 0,
        "maximum": 100,
        "description": "At most this many rows (0..100).",
    },
    "deep": {
        "type": "boolean",
        "default": False,
        "description": "Lower the quality gate and ignore age: wider, noisier results.",
    },
    "channel": CHANNEL,
    "project_id": PROJECT_ID,
    "source_id": {
        "type": "string",
        "default": "",
        "description": "Only memories whose source.id starts with this.",
    },
    "full_content": {
        "type": "boolean",
        "default": False,
        "description": "Return rows whole (within a 200,000-character budget) instead of "
        "500-character previews.",
    },
}

RECALL_DESCRIPTION = """Search long-term memory (memories and archived episodes) by meaning and
words.

Returns {messages: [...]} in ascending relevance: the LAST element is the best match.
Each row: content, ref ("mem:<id>" or "ep:<id>"), source, timestamp?, id? (your msg_id),
match_reason? The profile row ("[Profile] ...") may appear first. Content is a preview:
rows longer than 500 characters carry the first 500 plus content_truncated: true and
content_len; fetch full text for the rows you need with get_contents(agent_id, refs), or
pass full_content: true (bounded by a 200,000-character budget: past it rows degrade to
previews and full_content_budget_chars is set). Pass text you already hold in
exclude_contents (previews work) to avoid getting it back. `advisory` means recall is
degraded (e.g. word matching only) — tell the user when it asks you to."""


def _request(env: ToolEnv, args: JsonObject) -> pipeline.RecallRequest:
    """The library request of both recall tools (recall_with_context has no
    ``exclude_contents``: its exclusions come from ``external_context``)."""
    return pipeline.RecallRequest(
        agent_id=args["agent_id"],
        query=args["query"],
        limit=args["limit"],
        deep=args["deep"],
        channel=args["channel"],
        exclude_contents=args.get("exclude_contents", ()),
        project_id=args.get("project_id"),
        source_id=args["source_id"],
        paused=env.paused,
    )


def _shape(env: ToolEnv, body: JsonObject, args: JsonObject) -> JsonObject:
    return shaping.shape_recall(
        body,
        preview_chars=env.lib.settings.recall_preview_chars,
        full_content=bool(args["full_content"]),
    )


def _credits_statistics(env: ToolEnv, args: JsonObject) -> bool:
    """Recall itself never writes unless confidence scoring bumps recall statistics,
    which a persistence pause suppresses (spec §10.5); only then is the pause read."""
    return env.lib.settings.confidence_enabled


def _scores_confidence(settings: Settings) -> bool:
    """Confidence scoring credits recall statistics and demotes rows recalled minutes
    ago: such recalls write and read their own writes, on the primary."""
    return settings.confidence_enabled


async def _recall(env: ToolEnv, args: JsonObject) -> JsonObject:
    request = _request(env, args)
    body = await pipeline.recall(env.lib, env.caller.tenant_id, request)
    return _shape(env, body, args)


RECALL = ToolSpec(
    name="recall",
    description=RECALL_DESCRIPTION,
    input_schema=obj(
        {
            **_COMMON,
            "exclude_contents": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Texts you already hold; matching memories are left out.",
            },
        },
        ["agent_id", "query"],
    ),
    handler=_recall,
    demands=on_agent("agent_id", "read"),
    read_only=True,
    project_gate=True,
    refusal=refuse_with(messages=[]),
    pause=informing(_credits_statistics),
    primary_when=_scores_confidence,
)

RECALL_WITH_CONTEXT_DESCRIPTION = """Recall memories relevant to `query`, merged with the
conversation you pass in `external_context`, sorted by timestamp (oldest first).

Memories whose text matches any external_context entry are left out (you already hold
them). User and assistant turns are echoed back as rows with context_type:
"conversation" (no ref); entries with other roles only filter. Rows are previews like
recall (echoes too); use get_contents or full_content: true for full text."""


async def _recall_with_context(env: ToolEnv, args: JsonObject) -> JsonObject:
    request = _request(env, args)
    body = await with_context.recall_with_context(
        env.lib, env.caller.tenant_id, request, args["external_context"]
    )
    return _shape(env, body, args)


RECALL_WITH_CONTEXT = ToolSpec(
    name="recall_with_context",
    description=RECALL_WITH_CONTEXT_DESCRIPTION,
    input_schema=obj(
        {
            **_COMMON,
            "external_context": {
                "type": "array",
                "default": [],
                "description": "Your recent turns: [{role, content, name?, user_id?, "
                "timestamp?}]. Entries that are not objects are ignored.",
            },
        },
        ["agent_id", "query"],
    ),
    handler=_recall_with_context,
    demands=on_agent("agent_id", "read"),
    read_only=True,
    project_gate=True,
    refusal=refuse_with(messages=[]),
    pause=informing(_credits_statistics),
    primary_when=_scores_confidence,
)

TOOLS = [RECALL, RECALL_WITH_CONTEXT]
