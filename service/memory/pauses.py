"""The persistence pause ("session no-persist mode"; docs/tools.md, "pause_persistence") in its
hosted form.

CPersona keeps one process-global flag that silences every client of the
process. Here a pause is a row of ``persistence_pauses`` scoped to one tenant
(``session_key`` ``''``) or to one session key inside it, never to the whole
deployment. The state is read from Postgres on every check (no in-process
cache), so a pause written through one replica holds on every replica at once,
and expiry is judged by the database clock, which all replicas share.

A write obeys the tenant-wide pause and the pause of its own session (the
``X-CPersona-Session`` header at the MCP boundary), whichever lasts longer.
A session key only selects a pause inside the caller's tenant; it never
identifies anybody.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Literal

from service.db import pauses as pauses_queries
from service.db.pool import Connection
from service.errors import InvalidInput, Refused, ServiceError
from service.memory.library import Library
from service.models import TenantId

Scope = Literal["tenant", "session"]

DEFAULT_TTL_SECONDS = 1800
MAX_TTL_SECONDS = 86400
SESSION_KEY_MAX = 128
MAX_PAUSED_SESSIONS = 256
"""Session keys of one tenant that may hold a pause in force at once (CPersona 2.6 bounds its
process the same way): a full tenant refuses a new key rather than revoke a pause nobody
asked to lift; re-arming a paused key and the tenant-wide pause are never refused."""
SESSION_KEY_PATTERN = rf"^[!-~]{{0,{SESSION_KEY_MAX}}}$"
_SESSION_KEY = re.compile(SESSION_KEY_PATTERN)


def valid_session_key(key: str) -> bool:
    """Session keys are 0..128 visible ASCII characters ('' = no session)."""
    return bool(_SESSION_KEY.match(key))


def scope_of(session_key: str) -> Scope:
    return "session" if session_key else "tenant"


@dataclasses.dataclass(frozen=True, slots=True)
class ActivePause:
    """A pause in force for some write: which scope, until when, seconds left."""

    scope: Scope
    session_key: str
    expires_at: datetime
    remaining_seconds: float

    def ttl_label(self) -> str:
        """``28m left``, or ``42s left`` in the last minute (CPersona's wording)."""
        minutes = int(self.remaining_seconds // 60)
        if minutes < 1:
            return f"{max(0, int(self.remaining_seconds))}s left"
        return f"{minutes}m left"

    def reason(self, tool: str) -> str:
        how = "to re-enable" if self.scope == "tenant" else "with this session_key to re-enable"
        return (
            f"session no-persist mode active ({self.ttl_label()}) — `{tool}` skipped. "
            f"Call `resume_persistence` {how}, or wait for TTL to elapse."
        )


def _ttl(ttl_seconds: int) -> int:
    """Library callers get CPersona's rule: non-int or < 1 refused, the top clamped."""
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int):
        raise InvalidInput("ttl_seconds must be a positive integer")
    if ttl_seconds < 1:
        raise InvalidInput("ttl_seconds must be >= 1")
    return min(ttl_seconds, MAX_TTL_SECONDS)


def _checked(session_key: str) -> str:
    if not isinstance(session_key, str) or not valid_session_key(session_key):
        raise InvalidInput(
            f"session_key must be at most {SESSION_KEY_MAX} visible ASCII characters"
        )
    return session_key


@dataclasses.dataclass(frozen=True, slots=True)
class PauseSet:
    """A pause now in force for ``session_key`` ('' = the tenant) until ``expires_at``;
    ``ttl_seconds`` is the TTL it was set with, after clamping."""

    session_key: str
    expires_at: datetime
    ttl_seconds: int

    @property
    def scope(self) -> Scope:
        return scope_of(self.session_key)


@dataclasses.dataclass(frozen=True, slots=True)
class PauseLifted:
    """The pause of ``session_key`` ('' = the tenant) is lifted; ``was_active``: one was in
    force."""

    session_key: str
    was_active: bool

    @property
    def scope(self) -> Scope:
        return scope_of(self.session_key)


@dataclasses.dataclass(frozen=True, slots=True)
class PauseState:
    """The pause of ``session_key`` ('' = the tenant): its expiry and whole seconds left, both
    None when none is in force. ``tenant_paused``: a tenant-wide pause is in force (it
    silences a session's writes too)."""

    session_key: str
    expires_at: datetime | None
    ttl_remaining_seconds: int | None
    tenant_paused: bool

    @property
    def paused(self) -> bool:
        return self.expires_at is not None

    @property
    def scope(self) -> Scope:
        return scope_of(self.session_key)


async def pause(
    lib: Library,
    tenant_id: TenantId,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    session_key: str = "",
    by: str = "",
) -> PauseSet:
    """Pause writes of the tenant (or of one session) for ``ttl_seconds``.

    A second pause of the same scope replaces the expiry (last write wins).
    """
    ttl, key = _ttl(ttl_seconds), _checked(session_key)
    async with lib.db.tenant_tx(tenant_id) as conn:
        await pauses_queries.delete_expired_pauses(conn, tenant_id)
        if key:
            await _room_for(conn, tenant_id, key)
        expires_at = await pauses_queries.upsert_pause(conn, tenant_id, key, ttl, by)
    return PauseSet(key, expires_at, ttl)


async def _room_for(conn: Connection, tenant_id: TenantId, session_key: str) -> None:
    """Refused when :data:`MAX_PAUSED_SESSIONS` other session keys already hold a pause."""
    held = await pauses_queries.live_session_pauses(conn, tenant_id, session_key)
    if held >= MAX_PAUSED_SESSIONS:
        raise Refused(
            f"persistence was NOT paused: {MAX_PAUSED_SESSIONS} session keys of this tenant "
            "already hold a pause, and granting another would revoke one of them; "
            "resume_persistence on a key you no longer need frees one now, or wait for one "
            "to expire"
        )


async def resume(lib: Library, tenant_id: TenantId, session_key: str = "") -> PauseLifted:
    """Lift the pause of that scope, saying whether one was in force."""
    key = _checked(session_key)
    async with lib.db.tenant_tx(tenant_id) as conn:
        was_active = await pauses_queries.delete_pause(conn, tenant_id, key)
    return PauseLifted(key, was_active)


async def status(lib: Library, tenant_id: TenantId, session_key: str = "") -> PauseState:
    """The pause of that scope, and whether a tenant-wide pause holds (for a session scope
    that one silences the session's writes too)."""
    key = _checked(session_key)
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await pauses_queries.pauses_in_force(conn, tenant_id, key)
    own = next((row for row in rows if row.session_key == key), None)
    return PauseState(
        session_key=key,
        expires_at=None if own is None else own.expires_at,
        ttl_remaining_seconds=None if own is None else max(0, int(own.remaining)),
        tenant_paused=any(row.session_key == "" for row in rows),
    )


async def active_pause(
    lib: Library, tenant_id: TenantId, session_key: str = ""
) -> ActivePause | None:
    """The pause a write of ``session_key`` ('' = none) must obey now, or None.

    One indexed read (two primary-key probes) in its own transaction, never cached:
    the check of a write tool that does not read it inside its own write (see
    :class:`PauseGuard`), and check_health's to downgrade ``fix``.
    """
    async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
        return await pause_in_force(conn, tenant_id, session_key)


async def pause_in_force(
    conn: Connection, tenant_id: TenantId, session_key: str = ""
) -> ActivePause | None:
    """:func:`active_pause` inside the caller's tenant transaction (see
    :func:`pausable_key` for an invalid session key)."""
    rows = await pauses_queries.pauses_in_force(conn, tenant_id, pausable_key(session_key))
    if not rows:
        return None
    return active_of(max(rows, key=lambda item: item.expires_at))


def pausable_key(session_key: str) -> str:
    """The session key whose pause a write obeys: a key that is not a valid key cannot
    name a stored pause, so its write obeys only the tenant-wide one ('')."""
    return session_key if valid_session_key(session_key) else ""


def active_of(row: pauses_queries.PauseRow) -> ActivePause:
    """The stored pause row as the pause in force a write obeys."""
    return ActivePause(scope_of(row.session_key), row.session_key, row.expires_at, row.remaining)


@dataclasses.dataclass(frozen=True, slots=True)
class PauseGuard:
    """A write that obeys the pause of its tenant and of ``session_key``, read inside the
    write's own transaction instead of one of its own before it.

    The same read as :func:`active_pause`, in the snapshot the write commits from, and
    no transaction of its own on the path that matters for throughput: store, which reads
    it in its write statement (``store_memory``), and calls :func:`obey` only before it
    refuses bad input (bad input under a pause is skipped, as CPersona skips it) or
    before work it must not do under a pause (an inline embedding).
    """

    session_key: str = ""


class WritePaused(ServiceError):
    """A write obeying a :class:`PauseGuard` found a pause in force; nothing was written."""

    def __init__(self, active: ActivePause) -> None:
        super().__init__(f"writes are paused ({active.ttl_label()})")
        self.active = active


async def obey(conn: Connection, tenant_id: TenantId, guard: PauseGuard | None) -> None:
    """Raise :class:`WritePaused` when ``guard`` is given and a pause holds for it; the
    caller's transaction then rolls back before it has written anything."""
    if guard is None:
        return
    active = await pause_in_force(conn, tenant_id, guard.session_key)
    if active is not None:
        raise WritePaused(active)


async def obey_now(lib: Library, tenant_id: TenantId, guard: PauseGuard | None) -> None:
    """:func:`obey` in a transaction of its own, for a guarded write that stops before its
    write's transaction: a refusal of bad input (a pause wins over it, as the spec orders)
    or an inline embedding (work not to do under a pause)."""
    if guard is None:
        return
    async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
        await obey(conn, tenant_id, guard)
