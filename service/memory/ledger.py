"""The session ledger: which rows a session already received whole (no repeats).

A client that recalls several times in one session gets the same rows again and again.
With the ledger on for a call (``novel_only: true``, or ``CPERSONA_SESSION_DEDUP=true``
and an ``X-CPersona-Session`` header), rows the session already received whole come back
as a ``{ref, seen: true}`` stub. The ledger lives in Postgres (``recall_ledger``), so
replicas behind a load balancer share it; entries expire after
``CPERSONA_SESSION_DEDUP_TTL`` seconds and a session keeps at most
:data:`MAX_ROWS_PER_SESSION` of them (the oldest go first). One statement per answer
both reads and writes it (``db.ledger.ledger_deliver``).

A session belongs to the credential that opened it (an API key, or an OAuth grant):
the stored session is :func:`session_of` the caller's credential and the session's name,
so another credential of the tenant naming the same session (key ids are public) gets a
ledger of its own and can neither plant stubs in the other's nor read what it recalled
(docs/tools.md, docs/reliability.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final
from urllib.parse import quote

from service.db import ledger as ledger_queries
from service.db.ledger import Exchange, Offered
from service.memory.library import Library
from service.models import TenantId

MAX_ROWS_PER_SESSION: Final = 1000
"""Rows one session remembers: ten answers of 100 rows; older deliveries may repeat."""

KEY_SESSION_PREFIX: Final = "key:"
"""The session of a ``novel_only`` call without ``X-CPersona-Session``: the API key."""

CREDENTIAL_MAX: Final = 200
"""Longer (escaped) credentials are stored as their SHA-256 (an external ``sub`` is free)."""

__all__ = ["Exchange", "Offered", "deliver", "session_of", "session_of_key"]


def session_of_key(key_id: str) -> str:
    """The ledger session of calls that name none: one per API key."""
    return f"{KEY_SESSION_PREFIX}{key_id}"


def session_of(credential: str, session: str) -> str:
    """The stored session key of ``credential``'s session named ``session``.

    ``<credential> <session>``: the credential is percent-escaped (so it holds no space)
    and a session name is visible ASCII without spaces (``X-CPersona-Session``), so two
    credentials never share a stored session, whatever names they send."""
    escaped = quote(credential, safe=":")
    if len(escaped) > CREDENTIAL_MAX:
        escaped = "sha256:" + hashlib.sha256(credential.encode()).hexdigest()
    return f"{escaped} {session}"


async def deliver(
    lib: Library,
    tenant_id: TenantId,
    session_key: str,
    offered: Sequence[Offered],
    *,
    budget: int | None,
    look_up: bool,
) -> Exchange:
    """Which ``offered`` positions the session holds, recording the whole deliveries the
    budget admits (one statement, one transaction). With ``look_up`` false nothing is
    held (the call only records, e.g. ``novel_only: false`` in a deduplicated session)."""
    if not offered:
        return Exchange(frozenset(), 0, 0)
    # On the primary, also from a read-replica view: the statement writes, and it must
    # see what every replica recorded for the session.
    async with lib.write_db.tenant_tx(tenant_id) as conn:
        return await ledger_queries.ledger_deliver(
            conn,
            tenant_id,
            session_key,
            offered,
            budget=budget,
            look_up=look_up,
            ttl_seconds=lib.settings.session_dedup_ttl,
            max_rows=MAX_ROWS_PER_SESSION,
        )
