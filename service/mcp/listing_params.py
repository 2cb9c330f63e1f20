"""The parameters of the two list tools (list_memories, list_episodes): one record, and
the one way both call their library listing."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from service.mcp.registry import ToolEnv
from service.memory.library import Library
from service.memory.memories.listing import Listing
from service.models import TenantId

R = TypeVar("R")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ListParams:
    """An agent's rows newest first (``''`` = every agent the key may read), ``project_id``
    None for every project."""

    agent_id: str
    limit: int
    project_id: str | None = None


class Lister(Protocol[R]):
    def __call__(
        self,
        lib: Library,
        tenant_id: TenantId,
        *,
        agent_id: str | None,
        project_id: str | None,
        limit: int,
    ) -> Awaitable[Listing[R]]: ...


async def listed(env: ToolEnv, params: ListParams, lister: Lister[R]) -> Listing[R]:
    """The rows ``lister`` (``list_memories`` or ``list_episodes``) finds for the caller."""
    return await lister(
        env.lib,
        env.caller.tenant_id,
        agent_id=params.agent_id,
        project_id=params.project_id,
        limit=params.limit,
    )
