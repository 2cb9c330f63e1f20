"""Timestamps ahead of the server's clock (docs/tools.md, "store"; CPersona 2.6).

A caller's stamp further ahead of this clock than ``CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS``
is a claim about the future: such a row never ages and outranks every real one.
``CPERSONA_FUTURE_TIMESTAMP_MODE`` says what it costs; one verdict serves every write that
takes a caller's stamp (store's ``timestamp``, archive_episode's history).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from service.errors import Refused
from service.logs import get_logger
from service.memory.library import Library

log = get_logger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class AheadOfClock:
    """A stamp past the allowance: as sent, by how many seconds, and the allowance."""

    timestamp: str
    ahead_by_seconds: float
    allowance_seconds: int


def ahead_of_clock(
    lib: Library, stamp: str, parsed: datetime | None, label: str
) -> AheadOfClock | None:
    """The verdict on a caller's ``stamp`` (``parsed`` as the write reads it): past the
    allowance ahead of this clock, the boundary itself accepted. None for an unparseable
    stamp (``check_health``'s ``invalid_timestamp`` owns those) and in mode ``off``. Mode
    ``reject`` raises Refused naming the stamp (``label`` says which field), so the caller
    refuses before it writes or probes anything."""
    mode = lib.settings.future_timestamp_mode
    if mode == "off" or parsed is None:
        return None
    allowance = lib.settings.future_timestamp_skew_seconds
    ahead = (parsed - datetime.now(UTC)).total_seconds()
    if ahead <= allowance:
        return None
    log.warning("timestamp_ahead_of_clock", field=label, ahead_by_seconds=round(ahead), mode=mode)
    if mode == "reject":
        raise Refused(
            f"{label} {stamp!r} is {ahead:.0f}s ahead of this clock (allowance {allowance}s)"
        )
    return AheadOfClock(stamp, round(ahead, 3), allowance)
