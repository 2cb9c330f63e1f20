"""Content hygiene checks: annotations, mentions, oversized and empty content,
duplicates across channels, oversized profiles, agents without a profile.

Content rewrites go through ``health_rewrite_memories``: a rewritten row loses its
stale vector and is queued for a new one, and a row whose rewrite would duplicate a row
of its exact bucket (or come out empty) is deleted instead by ``health_delete_surplus``,
which the duplicate repair uses too, so the unique index always holds and the
declarations of a deleted copy move to the row that stays. Locked rows are never read
as repairable and never written.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from service.db.health import content as content_queries
from service.db.pool import Connection
from service.memory import text
from service.memory.health.base import Findings, Repairs, Scope

ANNOTATION_SQL = r"\[Memory from [^]]*\]"
MENTION_SQL = "<@[!&]?[0-9]+>"
_MENTION = re.compile(r"<@[!&]?[0-9]+>")
MISSING_PROFILE_NAMES = 100

Rewrite = Callable[[str], str]


def _rewrites(rows: list[content_queries.MemoryText], rewrite: Rewrite) -> list[tuple[int, str]]:
    """(id, new content) of the unlocked rows whose rewrite changes something."""
    pairs = ((row.id, rewrite(row.content)) for row in rows if not row.locked)
    contents = {row.id: row.content for row in rows}
    return [(row_id, new) for row_id, new in pairs if new != contents[row_id]]


async def _apply(conn: Connection, scope: Scope, pairs: list[tuple[int, str]]) -> Repairs:
    if not pairs:
        return Repairs(fixed=0, rewritten=0, deleted=0)
    ids, contents = zip(*pairs, strict=True)
    done = await content_queries.health_rewrite_memories(
        conn, scope.tenant_id, ids, contents, scope.provider
    )
    deleted = await content_queries.health_delete_surplus(conn, scope.tenant_id, done.surplus)
    return Repairs(fixed=done.rewritten + deleted, rewritten=done.rewritten, deleted=deleted)


def _strip_annotations(scope: Scope) -> Rewrite:
    return lambda content: text.sanitise(content, scope.settings.max_content_length).text


def _strip_mentions(content: str) -> str:
    return _MENTION.sub("", content).strip()


def _cut(scope: Scope) -> Rewrite:
    return lambda content: content[: scope.settings.max_content_length]


async def memory_annotation(conn: Connection, scope: Scope) -> Findings | None:
    """``[Memory from …]`` echoes pasted back by agents (store strips them on write)."""
    rows = await content_queries.health_pattern_memories(
        conn, scope.tenant_id, scope.agent, ANNOTATION_SQL
    )
    if not rows:
        return None
    writable = _rewrites(rows, _strip_annotations(scope))
    return {"type": "memory_annotation", "count": len(rows), "repairable": len(writable)}


async def fix_memory_annotation(conn: Connection, scope: Scope) -> Repairs:
    rows = await content_queries.health_pattern_memories(
        conn, scope.tenant_id, scope.agent, ANNOTATION_SQL
    )
    return await _apply(conn, scope, _rewrites(rows, _strip_annotations(scope)))


async def discord_mention(conn: Connection, scope: Scope) -> Findings | None:
    """Raw Discord mention tokens (``<@123>``, ``<@!123>``, ``<@&123>``) in content."""
    rows = await content_queries.health_pattern_memories(
        conn, scope.tenant_id, scope.agent, MENTION_SQL
    )
    if not rows:
        return None
    writable = _rewrites(rows, _strip_mentions)
    return {"type": "discord_mention", "count": len(rows), "repairable": len(writable)}


async def fix_discord_mention(conn: Connection, scope: Scope) -> Repairs:
    rows = await content_queries.health_pattern_memories(
        conn, scope.tenant_id, scope.agent, MENTION_SQL
    )
    return await _apply(conn, scope, _rewrites(rows, _strip_mentions))


async def oversized_content(conn: Connection, scope: Scope) -> Findings | None:
    """Memories over CPERSONA_MAX_CONTENT_LENGTH (written before the cap, or by hand)."""
    limit = scope.settings.max_content_length
    rows = await content_queries.health_oversized_memories(
        conn, scope.tenant_id, scope.agent, limit
    )
    if not rows:
        return None
    return {
        "type": "oversized_content",
        "count": len(rows),
        "repairable": len(_rewrites(rows, _cut(scope))),
        "max_len": max(len(row.content) for row in rows),
        "limit": limit,
    }


async def fix_oversized_content(conn: Connection, scope: Scope) -> Repairs:
    limit = scope.settings.max_content_length
    rows = await content_queries.health_oversized_memories(
        conn, scope.tenant_id, scope.agent, limit
    )
    return await _apply(conn, scope, _rewrites(rows, _cut(scope)))


async def duplicate_content(conn: Connection, scope: Scope) -> Findings | None:
    """The same content twice in one agent and project, in different channels (the
    unique index only forbids it within one channel). The repair keeps the
    channel-less row (visible from every channel), else the oldest."""
    found = await content_queries.health_duplicate_content(conn, scope.tenant_id, scope.agent)
    if found.groups == 0:
        return None
    return {
        "type": "duplicate_content",
        "groups": found.groups,
        "total_extra": found.total_extra,
        "repairable": found.repairable,
    }


async def fix_duplicate_content(conn: Connection, scope: Scope) -> Repairs:
    return Repairs(
        fixed=await content_queries.health_delete_surplus(
            conn,
            scope.tenant_id,
            await content_queries.health_duplicate_surplus(conn, scope.tenant_id, scope.agent),
        )
    )


async def empty_content(conn: Connection, scope: Scope) -> Findings | None:
    """Whitespace-only memories (store refuses them; they come from elsewhere)."""
    found = await content_queries.health_empty_content(conn, scope.tenant_id, scope.agent)
    if found.count == 0:
        return None
    return {"type": "empty_content", "count": found.count, "repairable": found.repairable}


async def fix_empty_content(conn: Connection, scope: Scope) -> Repairs:
    return Repairs(
        fixed=await content_queries.health_delete_empty(conn, scope.tenant_id, scope.agent)
    )


async def oversized_profile(conn: Connection, scope: Scope) -> Findings | None:
    """Profiles over CPERSONA_MAX_PROFILE_LENGTH: injected into recalls at full size."""
    limit = scope.settings.max_profile_length
    found = await content_queries.health_oversized_profiles(
        conn, scope.tenant_id, scope.agent, limit
    )
    if found.count == 0:
        return None
    return {
        "type": "oversized_profile",
        "count": found.count,
        "max_len": found.max_len,
        "limit": limit,
        "repairable": found.count,
    }


async def fix_oversized_profile(conn: Connection, scope: Scope) -> Repairs:
    limit = scope.settings.max_profile_length
    return Repairs(
        fixed=await content_queries.health_cut_profiles(conn, scope.tenant_id, scope.agent, limit)
    )


async def missing_profile(conn: Connection, scope: Scope) -> Findings | None:
    """Agents with memories but no profile (an observation: profiles are optional)."""
    names = await content_queries.health_missing_profiles(conn, scope.tenant_id, scope.agent)
    if not names:
        return None
    issue: Findings = {
        "type": "missing_profile",
        "count": len(names),
        "agents": names[:MISSING_PROFILE_NAMES],
    }
    if len(names) > MISSING_PROFILE_NAMES:
        issue["agents_truncated"] = True
    return issue
