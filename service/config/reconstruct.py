"""Settings of ``reconstruct``'s window and breadth; the names are CPersona 2.6's
(docs/tools.md, "reconstruct")."""

from __future__ import annotations

import dataclasses

from service.config.fields import parse_int, setting
from service.errors import ConfigError

_COUNT = parse_int(0, 100)


@dataclasses.dataclass(frozen=True)
class ReconstructSettings:
    reconstruct_default_count: int = setting(10, "CPERSONA_RECONSTRUCT_DEFAULT_COUNT", parse=_COUNT)
    """Items a call returns when it names no ``count`` (at most the maximum)."""
    reconstruct_max_count: int = setting(10, "CPERSONA_RECONSTRUCT_MAX_COUNT", parse=_COUNT)
    """The most items; a larger ``count`` is clamped and the clamp reported (pro: 15)."""
    reconstruct_forced_count: int | None = setting(
        None, "CPERSONA_RECONSTRUCT_FORCED_COUNT", parse=_COUNT
    )
    """A window every call gets, whatever it asks (unset: none; at most the maximum)."""
    reconstruct_top_k: int = setting(20, "CPERSONA_RECONSTRUCT_TOP_K", parse=parse_int(1, 100))
    """Candidate depth when the caller names no ``top_k``."""
    reconstruct_max_hops: int = setting(2, "CPERSONA_RECONSTRUCT_MAX_HOPS", parse=parse_int(0, 5))
    """Relation hops of the walk when the caller names no ``max_hops``."""
    reconstruct_max_evidence: int = setting(
        40, "CPERSONA_RECONSTRUCT_MAX_EVIDENCE", parse=parse_int(1, 100)
    )
    """Claims kept per item when the caller names no ``max_evidence``."""
    reconstruct_adjacency_seconds: int = setting(
        60, "CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS", parse=parse_int(0, 86_400)
    )
    """``cluster:adjacent``'s window after a burst's first row (0: the key is off)."""


def check_reconstruct(settings: ReconstructSettings) -> None:
    """A default or forced window above the maximum refuses startup: it is never clamped
    silently."""
    for name, value in (
        ("CPERSONA_RECONSTRUCT_DEFAULT_COUNT", settings.reconstruct_default_count),
        ("CPERSONA_RECONSTRUCT_FORCED_COUNT", settings.reconstruct_forced_count),
    ):
        if value is not None and value > settings.reconstruct_max_count:
            raise ConfigError(f"{name}: must not exceed CPERSONA_RECONSTRUCT_MAX_COUNT")
