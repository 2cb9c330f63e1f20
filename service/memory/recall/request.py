"""What a recall is asked: the library's request of both recall tools."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

DEFAULT_LIMIT = 10
"""Rows a recall returns when the caller names no ``limit`` (docs/tools.md, "Tool reference")."""


@dataclasses.dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall's arguments as the tools pass them (defaults as in their schemas);
    ``paused`` says a persistence pause holds, so no recall statistics are credited."""

    agent_id: str
    query: str
    limit: int = DEFAULT_LIMIT
    deep: bool = False
    channel: str = ""
    exclude_contents: Sequence[object] = ()
    project_id: str | None = None
    source_id: str = ""
    paused: bool = False
