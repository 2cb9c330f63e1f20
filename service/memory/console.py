"""Web console sessions (docs/console.md, "Security model"): opened from an API key,
resolved to that key's caller on every request, ended by sign-out, idleness, age or the
key's revocation.

The browser holds a random session id (256 bits); only its SHA-256 is stored, so a copy
of the table opens no session. A session carries nothing of its own: every request
re-reads the key it was opened from, so its grants and tool set are the key's as they are
now, and a revoked or expired key ends it on every replica at the next request.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
from datetime import UTC, datetime
from typing import Final, Literal, cast

from service.db import console as console_queries
from service.db.pool import Database
from service.errors import InvalidInput
from service.memory import bounds, tenants
from service.memory.library import Library
from service.models import Caller, Permission, TenantId

SESSION_ID_BYTES = 32
CREDENTIAL_PREFIX = "console:"
"""A console caller's credential (``console:<KEY_ID>``): its session ledger is its own."""


def new_session_id() -> str:
    return secrets.token_urlsafe(SESSION_ID_BYTES)


def session_hash(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "replace")).digest()


async def open_session(
    db: Database, caller: Caller, *, idle_seconds: int, lifetime_seconds: float
) -> str:
    """A new session for ``caller`` (resolved from a pasted key); returns its id, which
    only the browser keeps. Sessions of every tenant that have ended are dropped first."""
    session_id = new_session_id()
    async with db.admin_tx() as conn:
        await console_queries.delete_ended_console_sessions(conn)
        await console_queries.insert_console_session(
            conn,
            caller.tenant_id,
            session_hash(session_id),
            caller.key_id,
            idle_seconds,
            lifetime_seconds,
        )
    return session_id


async def session_caller(db: Database, session_id: str) -> Caller | None:
    """The caller of a live session (its use recorded); None when the id is unknown or
    the session ended (signed out, idle, too old, its key revoked or expired)."""
    if not session_id or len(session_id) > 2 * SESSION_ID_BYTES:
        return None
    async with db.admin_conn() as conn:  # one statement, no BEGIN/COMMIT
        row = await console_queries.console_session_for_auth(conn, session_hash(session_id))
    if row is None:
        return None
    return Caller(
        tenant_id=TenantId(row.tenant_id),
        tenant_slug=row.tenant_slug,
        key_id=row.prefix,
        label=row.label,
        grants={agent: cast(Permission, level) for agent, level in row.grants.items()},
        tool_set=tenants.parse_tool_set(row.tool_set),
        credential=CREDENTIAL_PREFIX + row.prefix,
    )


async def close_session(db: Database, session_id: str) -> None:
    """Sign-out: the session authenticates nothing any more (unknown ids are ignored)."""
    async with db.admin_conn() as conn:
        await console_queries.delete_console_session(conn, session_hash(session_id))


AGENTS_PAGE = 50
"""Agents per page of the console's agents list (keyset-paged by name)."""
MAX_CURSOR_CHARS = 1000
"""A page cursor is an agent name; a longer one is refused (InvalidInput)."""

AgentSummary = console_queries.AgentRow


@dataclasses.dataclass(frozen=True, slots=True)
class Readable:
    """Which agents a key may read: every agent but ``hidden`` when its default grant
    reads (``by_default``), and the ``granted`` ones whatever the default."""

    by_default: bool
    hidden: tuple[str, ...]
    granted: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class AgentsPage:
    """One page of agents, by name; ``next_after``: the cursor of the next page, None at
    the end."""

    agents: list[AgentSummary]
    next_after: str | None


async def list_agents(
    lib: Library, tenant_id: TenantId, readable: Readable, after: str = "", limit: int = AGENTS_PAGE
) -> AgentsPage:
    """The agents of ``tenant_id`` that ``readable`` admits, named after ``after``, with
    their counts (memories, episodes, locked, pending embeddings, last write and recall).
    An agent the key may not read is never returned, not even counted."""
    if len(after) > MAX_CURSOR_CHARS:
        raise InvalidInput(f"page cursor longer than {MAX_CURSOR_CHARS} characters")
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await console_queries.console_agents(
            conn,
            tenant_id,
            after,
            readable.by_default,
            list(readable.hidden),
            list(readable.granted),
            limit + 1,
        )
    more = len(rows) > limit
    rows = rows[:limit]
    return AgentsPage(rows, rows[-1].name if more else None)


RECORDS_PAGE = 50
"""Memories or episodes per page of an agent's list (keyset-paged, newest first)."""
PREVIEW_CHARS = 500
"""Characters of each text a list shows (the record page shows it whole)."""
MAX_RECORD_CURSOR_CHARS = 100
RecordSummary = console_queries.RecordRow
RecordKind = Literal["mem", "ep"]
_FIRST: Final = (datetime.max.replace(tzinfo=UTC), 2**63 - 1)


@dataclasses.dataclass(frozen=True, slots=True)
class RecordsPage:
    """One page of an agent's memories or episodes, newest first; ``next_before``: the
    cursor of the next (older) page, None at the end."""

    kind: RecordKind
    records: list[RecordSummary]
    next_before: str | None


def record_cursor(row: RecordSummary) -> str:
    """The cursor of the page after ``row``: its creation time and id."""
    return f"{row.created_at.isoformat()}~{row.id}"


def parse_record_cursor(raw: str) -> tuple[datetime, int]:
    """A cursor of :func:`record_cursor` ('' is the first page); InvalidInput otherwise."""
    if not raw:
        return _FIRST
    moment, sep, number = raw.partition("~")
    try:
        if len(raw) > MAX_RECORD_CURSOR_CHARS or not sep:
            raise ValueError(raw)
        at, row_id = datetime.fromisoformat(moment), int(number)
    except ValueError:
        raise InvalidInput("not a page cursor of this list; start from the first page") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at, row_id


async def list_records(
    lib: Library,
    tenant_id: TenantId,
    agent: str,
    kind: RecordKind,
    before: str = "",
    limit: int = RECORDS_PAGE,
) -> RecordsPage:
    """One page of ``agent``'s memories (``mem``) or episodes (``ep``), newest first,
    before the cursor ``before``; each text cut to :data:`PREVIEW_CHARS`. The caller has
    checked that its key may read ``agent``."""
    bounds.check_text("agent_id", agent, bounds.IDENTIFIER_CHARS)
    cursor = parse_record_cursor(before)
    read = console_queries.console_memories if kind == "mem" else console_queries.console_episodes
    query = console_queries.RecordsQuery(
        tenant_id, agent, cursor[0], cursor[1], PREVIEW_CHARS, limit + 1
    )
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await read(conn, query)
    more = len(rows) > limit
    rows = rows[:limit]
    return RecordsPage(kind, rows, record_cursor(rows[-1]) if more else None)


RecordDetail = console_queries.RecordDetail
MAX_RECORD_ID = 2**63 - 1
_REF = re.compile(r"(mem|ep):([0-9]{1,19})")


def parse_ref(ref: str) -> tuple[RecordKind, int] | None:
    """``mem:N`` or ``ep:N`` as (kind, id); None for anything else."""
    match = _REF.fullmatch(ref)
    if match is None or int(match.group(2)) > MAX_RECORD_ID:
        return None
    kind: RecordKind = "mem" if match.group(1) == "mem" else "ep"
    return kind, int(match.group(2))


async def get_record(
    lib: Library, tenant_id: TenantId, agent: str, kind: RecordKind, record_id: int
) -> RecordDetail | None:
    """One memory or episode of ``agent``, whole; None when ``agent`` has no such row
    (another agent's or another tenant's row answers the same). The caller has checked
    that its key may read ``agent``."""
    bounds.check_text("agent_id", agent, bounds.IDENTIFIER_CHARS)
    read = console_queries.console_memory if kind == "mem" else console_queries.console_episode
    async with lib.db.tenant_tx(tenant_id) as conn:
        return await read(conn, tenant_id, agent, record_id)
