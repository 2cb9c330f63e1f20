"""Settings of the web console at ``/console`` (docs/console.md): whether it runs, how
long its sessions live, and how many sign-ins an address or a key prefix may try."""

from __future__ import annotations

import dataclasses

from service.config.fields import parse_bool, parse_float, parse_int, setting


@dataclasses.dataclass(frozen=True)
class ConsoleSettings:
    # -- the web console
    console: bool = setting(True, "CPERSONA_CONSOLE", parse=parse_bool)
    """Serve the web console at ``/console``; false: no console route exists (404)."""
    console_idle_minutes: int = setting(
        30, "CPERSONA_CONSOLE_IDLE_MINUTES", parse=parse_int(1, 1440)
    )
    """Minutes a console session may go unused before it ends."""
    console_session_hours: float = setting(
        12.0, "CPERSONA_CONSOLE_SESSION_HOURS", parse=parse_float(0.1, 720)
    )
    """Hours after sign-in a console session ends however active it is."""
    console_sign_in_attempts_per_hour: float = setting(
        30.0, "CPERSONA_CONSOLE_SIGN_IN_ATTEMPTS_PER_HOUR", parse=parse_float(0, 1_000_000)
    )
    """API keys one address, and one key prefix, may try at console sign-in per hour (and
    at once) per process; 0 = unlimited. Sign-in checks keys, so this bounds guessing."""
