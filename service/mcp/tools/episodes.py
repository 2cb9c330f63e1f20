"""Episode tools: archive_episode, list_episodes, delete_episode."""

from __future__ import annotations

import dataclasses

from service.mcp.listing_params import ListParams, listed
from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent, refuse_with, skip_with
from service.mcp.render import listing as render_listing, writes
from service.mcp.schemas import (
    AGENT_ID,
    CHANNEL,
    EPISODE_ID,
    LIST_AGENT_ID,
    OWNER_AGENT_ID,
    PROJECT_ID,
    SUPERSEDES,
    WRITE_PROJECT_ID,
)
from service.mcp.shaping import listing as listing_shaping
from service.memory import bounds, episodes
from service.models import JsonObject


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DeleteEpisodeParams:
    episode_id: int
    agent_id: str


async def _delete_episode(env: ToolEnv, params: DeleteEpisodeParams) -> JsonObject:
    deleted = await episodes.delete_episode(
        env.lib, env.caller.tenant_id, params.episode_id, params.agent_id
    )
    return writes.episode_deleted(deleted)


DELETE_EPISODE = ToolSpec(
    name="delete_episode",
    description="""Delete one episode. Returns {ok, deleted_id}.""",
    input_schema=obj({"episode_id": EPISODE_ID, "agent_id": OWNER_AGENT_ID}, ["episode_id"]),
    params=DeleteEpisodeParams,
    handler=_delete_episode,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with(writes.DELETE_PAUSED),
    destructive=True,
    idempotent=True,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveEpisodeParams:
    agent_id: str
    summary: str
    history: tuple[JsonObject, ...]
    keywords: str
    resolved: bool
    project_id: str
    channel: str
    supersedes: tuple[str, ...] | None = None


async def _archive_episode(env: ToolEnv, params: ArchiveEpisodeParams) -> JsonObject:
    request = episodes.ArchiveRequest(
        agent_id=params.agent_id,
        summary=params.summary,
        history=params.history,
        keywords=params.keywords,
        resolved=params.resolved,
        project_id=params.project_id,
        channel=params.channel,
        supersedes=None if params.supersedes is None else list(params.supersedes),
    )
    archived = await episodes.archive_episode(
        env.lib, env.caller.tenant_id, request, env.pause_guard
    )
    return writes.episode_archived(archived)


ARCHIVE_EPISODE = ToolSpec(
    name="archive_episode",
    description="""Archive your summary of a session (an episode) for later recall;
history's timestamps set its span. Returns {ok, episode_id}.""",
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "summary": {"type": "string"},
            "history": {
                "type": "array",
                "items": {"type": "object"},
                "maxItems": bounds.HISTORY_ITEMS,
                "default": [],
                "description": "[{role, content, timestamp}]",
            },
            "keywords": {"type": "string", "default": ""},
            "resolved": {"type": "boolean", "default": False},
            "project_id": WRITE_PROJECT_ID,
            "channel": CHANNEL,
            "supersedes": SUPERSEDES,
        },
        ["agent_id", "summary"],
    ),
    params=ArchiveEpisodeParams,
    handler=_archive_episode,
    project_gate=True,
    demands=on_agent("agent_id", "read-write"),
    refusal=writes.episode_refused,
    pause=skip_with(writes.ARCHIVE_PAUSED, in_write=True),
    destructive=False,
    idempotent=False,
    always_load=True,
)


async def _list_episodes(env: ToolEnv, params: ListParams) -> JsonObject:
    found = await listed(env, params, episodes.list_episodes)
    preview_chars = env.lib.settings.recall_preview_chars
    shaped, trimmed = listing_shaping.budget_list_episodes(found.rows, preview_chars)
    sent = [render_listing.episode(item.row, item.cut) for item in shaped]
    return render_listing.page(
        "episodes", sent, trimmed, listing_shaping.LIST_EPISODES_BUDGET_CHARS, found.capped_at
    )


LIST_EPISODES = ToolSpec(
    name="list_episodes",
    description="""Browse episodes newest first; limit clamped to 0..200. Returns
{episodes, count}.""",
    input_schema=obj(
        {
            "agent_id": LIST_AGENT_ID,
            "limit": {"type": "integer", "default": 50},
            "project_id": PROJECT_ID,
        }
    ),
    params=ListParams,
    handler=_list_episodes,
    project_gate=True,
    refusal=refuse_with(episodes=[], count=0),
    demands=on_agent("agent_id", "read"),
    read_only=True,
)

TOOLS = [ARCHIVE_EPISODE, LIST_EPISODES, DELETE_EPISODE]
