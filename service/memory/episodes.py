"""Episodes: archived session summaries (docs/tools.md, "archive_episode";
docs/tools.md, "list_episodes")."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeAlias

from service.db import agents, episodes, queue
from service.errors import Refused
from service.memory import future, pauses, superseding, supersession, text
from service.memory.library import Library
from service.memory.memories.listing import Listing, capped, page_of
from service.memory.passages import plan as passage_plan
from service.memory.queue.inline import embed_inline, embed_soon, episode_text, waits_for_vector
from service.models import TenantId

LIST_EPISODES_MAX = 200
MAX_EPISODE_ID = 2**63 - 1
EMPTY_SUMMARY = (
    "summary is required: server-side episode summarisation was removed; pre-compute summary "
    "(and keywords) before calling archive_episode"
)
BLANK_SUMMARY = "summary is required to archive an episode"


@dataclasses.dataclass(frozen=True, slots=True)
class ArchiveRequest:
    agent_id: str
    summary: str
    history: Sequence[object] = ()
    keywords: object = ""
    resolved: bool | None = None
    project_id: str = ""
    channel: str = ""
    supersedes: object = None
    """The records the episode replaces (docs/tools.md, "Facts that change"); None: none."""


@dataclasses.dataclass(frozen=True, slots=True)
class Archived:
    """The new episode, whether its summary or keywords were cut, and what its
    ``supersedes`` list declared (None without one)."""

    episode_id: int
    truncated: bool = False
    ahead_of_clock: future.AheadOfClock | None = None
    """The history's stamp past the allowance ahead of the server's clock (mode ``warn``)."""
    supersedes: superseding.Superseding | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeDeleted:
    """The episode deleted, and the supersessions made to keep its chain whole."""

    episode_id: int
    relinked: tuple[supersession.Relinked, ...] = ()


def history_span(history: Sequence[object]) -> tuple[str | None, str | None]:
    """Lexicographic min and max of the non-empty ``timestamp`` strings in history."""
    stamps = [
        entry["timestamp"]
        for entry in history
        if isinstance(entry, dict)
        and isinstance(entry.get("timestamp"), str)
        and entry["timestamp"]
    ]
    return (min(stamps), max(stamps)) if stamps else (None, None)


async def archive_episode(
    lib: Library,
    tenant_id: TenantId,
    req: ArchiveRequest,
    guard: pauses.PauseGuard | None = None,
) -> Archived:
    """Store a session summary as a new episode (never deduplicated).

    The episode is stored with its embedding job and embedded moments later (or,
    with an inline timeout, embedded before the transaction; a miss queues it the
    same way). With ``guard`` the persistence pause is read in the write's own
    transaction (one transaction per archive), and before a refusal or an inline
    embedding; a pause raises WritePaused and nothing is written.
    """
    start, end = history_span(req.history)
    try:
        summary, keywords = _texts(lib, req)
        ahead = _history_ahead(lib, start, end)
    except Refused:
        await pauses.obey_now(lib, tenant_id, guard)
        raise
    if waits_for_vector(lib):
        await pauses.obey_now(lib, tenant_id, guard)
    inline = await embed_inline(lib, tenant_id, episode_text(summary.text, keywords.text))
    async with lib.db.tenant_tx(tenant_id) as conn:
        await pauses.obey(conn, tenant_id, guard)
        agent = await agents.ensure_agent(conn, tenant_id, req.agent_id)
        row = episodes.NewEpisode(
            agent_id=agent,
            project_id=req.project_id,
            channel=req.channel,
            summary=summary.text,
            keywords=keywords.text,
            start_time=start,
            end_time=end,
            resolved=bool(req.resolved),
            embedding=inline.vector,
            embedding_model=inline.model,
        )
        episode_id = await episodes.insert_episode(conn, tenant_id, row)
        text = episode_text(summary.text, keywords.text)
        later = inline.vector is None or passage_plan.may_need_passages(lib, text)
        if later and lib.queue_enabled:
            await queue.enqueue_embedding(conn, tenant_id, "ep", episode_id, inline.error)
    if later:
        embed_soon(lib, tenant_id, "ep", episode_id)
    archived = Archived(episode_id, summary.truncated or keywords.truncated, ahead)
    if req.supersedes is None:
        return archived
    rider = superseding.Rider(
        agent_id=req.agent_id,
        newer=("ep", episode_id),
        refs=req.supersedes,
        project_id=req.project_id,
        channel=req.channel,
    )
    return dataclasses.replace(
        archived, supersedes=await superseding.declare(lib, tenant_id, rider)
    )


def _history_ahead(lib: Library, start: str | None, end: str | None) -> future.AheadOfClock | None:
    """The future-timestamp verdict on the history's span, the latest stamp first (the span
    is what an episode is ordered and windowed by, so it would never age)."""
    for stamp in (end, start):
        if stamp:
            ahead = future.ahead_of_clock(
                lib, stamp, text.parse_timestamp(stamp), "history timestamp"
            )
            if ahead is not None:
                return ahead
    return None


def _texts(lib: Library, req: ArchiveRequest) -> tuple[text.Sanitised, text.Sanitised]:
    """The sanitised summary and keywords, or Refused for an empty or blank summary."""
    if not req.summary:
        raise Refused(EMPTY_SUMMARY)
    limit = lib.settings.max_content_length
    summary = text.sanitise(req.summary, limit)
    keywords = text.sanitise(req.keywords if isinstance(req.keywords, str) else "", limit)
    if not summary.text:
        raise Refused(BLANK_SUMMARY)
    return summary, keywords


ListedEpisode: TypeAlias = episodes.EpisodeListRow
"""One episode of a listing, whole, as stored (``start_time``/``end_time`` None when the
history had no timestamps); the boundary renders it."""


async def list_episodes(
    lib: Library, tenant_id: TenantId, *, agent_id: str | None, project_id: str | None, limit: int
) -> Listing[ListedEpisode]:
    """Newest-first episodes of the tenant; empty agent = all agents; limit clamped 0..200
    (``capped_at`` says when that withheld rows)."""
    wanted, read = capped(limit, LIST_EPISODES_MAX)
    if wanted == 0:
        return Listing([])
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await episodes.list_episodes(conn, tenant_id, agent_id or None, project_id, read)
    return page_of(rows, wanted, LIST_EPISODES_MAX)


async def delete_episode(
    lib: Library, tenant_id: TenantId, episode_id: int, agent_id: str = ""
) -> EpisodeDeleted:
    """Delete one episode (its queue job goes with it, by trigger); episodes have no lock.
    In the middle of a supersession chain, its successor then supersedes what it
    superseded (``relinked``)."""
    deleted = False
    relinked: list[supersession.Relinked] = []
    if 0 < episode_id <= MAX_EPISODE_ID:
        async with lib.db.tenant_tx(tenant_id) as conn:
            found = await supersession.neighbours(conn, tenant_id, ("ep", episode_id))
            deleted = await episodes.delete_episode(conn, tenant_id, episode_id, agent_id or None)
            if deleted:
                relinked = await supersession.relink(conn, tenant_id, ("ep", episode_id), found)
    if not deleted:
        raise Refused(f"Episode {episode_id} not found or not owned by agent")
    return EpisodeDeleted(episode_id, tuple(relinked))
