"""The parameters of the two list tools (list_memories, list_episodes): one record."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ListParams:
    """An agent's rows newest first (``''`` = every agent the key may read), ``project_id``
    None for every project."""

    agent_id: str
    limit: int
    project_id: str | None = None
