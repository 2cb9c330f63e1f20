"""A tenant's share of a pool's connections (docs/reliability.md, "Fair shares of the
database (hardening round three)").

One tenant's slow statements must not hold every pooled connection while the other
tenants wait for one: a tenant holds at most ``places`` connections of a pool at a time.
Its next transaction waits behind its own, in a queue of its own (first come, first
served), never in the pool's queue, so the pool's next free connection goes to a tenant
under its share. The wait counts against the same acquire timeout as the pool's.

Places are counted per request, not per transaction: a transaction opened while the same
request (the task and what it awaits) already holds a place of this pool for the tenant
takes no second place, so nested transactions cannot wait for their own request. A task
the request started inherits its context, but once the request's transaction has ended
the task counts again like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


@dataclasses.dataclass(eq=False, slots=True)
class _Hold:
    """A place a request holds: of which share, for which tenant; ``active`` until it ends."""

    share: TenantShare
    tenant: str
    parent: _Hold | None
    active: bool = True


@dataclasses.dataclass(eq=False, slots=True)
class _Slot:
    """One tenant's places: a semaphore, and how many requests hold or wait for one."""

    semaphore: asyncio.Semaphore
    users: int = 0


_held: contextvars.ContextVar[_Hold | None] = contextvars.ContextVar(
    "cpersona_tenant_share", default=None
)


def places_of(pool_size: int, share: float) -> int | None:
    """Connections one tenant may hold of a ``pool_size`` pool: ``share`` of it, at least
    one; None (no bound) for a share of 1."""
    return None if share >= 1 else max(1, int(pool_size * share))


class TenantShare:
    """At most ``places`` connections of one pool held by one tenant (None: unbounded)."""

    def __init__(self, places: int | None) -> None:
        self.places = places
        self._slots: dict[str, _Slot] = {}

    def holding(self, tenant: str) -> bool:
        """Whether this request already holds one of ``tenant``'s places here."""
        hold = _held.get()
        while hold is not None:
            if hold.active and hold.share is self and hold.tenant == tenant:
                return True
            hold = hold.parent
        return False

    def waiting(self, tenant: str) -> int:
        """Requests of ``tenant`` holding or waiting for a place (0 when none)."""
        slot = self._slots.get(tenant)
        return slot.users if slot is not None else 0

    @asynccontextmanager
    async def place(
        self, tenant: str, within: float, busy: Callable[[], Exception]
    ) -> AsyncIterator[None]:
        """Hold one of ``tenant``'s places for the block; ``busy()`` is raised after
        ``within`` seconds without one. No wait when unbounded or already held by this
        request."""
        if self.places is None or self.holding(tenant):
            yield
            return
        slot = self._slots.setdefault(tenant, _Slot(asyncio.Semaphore(self.places)))
        slot.users += 1
        try:
            async with asyncio.timeout(within):
                await slot.semaphore.acquire()
        except TimeoutError:
            self._leave(tenant, slot)
            raise busy() from None
        except BaseException:
            self._leave(tenant, slot)
            raise
        hold = _Hold(self, tenant, _held.get())
        token = _held.set(hold)
        try:
            yield
        finally:
            hold.active = False
            with contextlib.suppress(ValueError):  # ended in another context: nothing to undo
                _held.reset(token)
            slot.semaphore.release()
            self._leave(tenant, slot)

    def _leave(self, tenant: str, slot: _Slot) -> None:
        slot.users -= 1
        if slot.users == 0 and self._slots.get(tenant) is slot:
            del self._slots[tenant]
