"""Whole-agent operations: delete_agent_data (docs/tools.md, "delete_agent_data")."""

from __future__ import annotations

import dataclasses

from service.db import agents, episodes, memories, profiles, queue
from service.errors import Refused
from service.memory.library import Library
from service.memory.portability import export_area
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class AgentDataDeleted:
    """What delete_agent_data removed for ``agent_id``: rows per kind, and the embedding
    jobs of those rows (``pending_tasks``)."""

    agent_id: str
    memories: int
    profiles: int
    episodes: int
    pending_tasks: int


async def delete_agent_data(lib: Library, tenant_id: TenantId, agent_id: str) -> AgentDataDeleted:
    """Delete every memory, profile and episode of one agent, the embedding jobs of
    those rows (``pending_tasks``) and every file of the tenant's export area
    that holds the agent's records, in one transaction (the files' bytes are removed
    once it commits), so deleted data cannot come back through an old export.

    Locked memories go too (a lock protects single edits, not the agent's
    deletion). Nothing of another agent or tenant is touched.
    """
    if not agent_id:
        raise Refused("agent_id is required for bulk deletion")
    counts = {"memories": 0, "profiles": 0, "episodes": 0, "jobs": 0}
    async with lib.db.tenant_tx(tenant_id) as conn:
        exported = await export_area.forget_agent_files(conn, tenant_id, agent_id)
        agent = await agents.agent_id_by_name(conn, tenant_id, agent_id)
        if agent is not None:
            counts["jobs"] = await queue.delete_agent_embedding_jobs(conn, tenant_id, agent)
            counts["memories"] = await memories.delete_agent_memories(conn, tenant_id, agent)
            counts["profiles"] = await profiles.delete_agent_profiles(conn, tenant_id, agent)
            counts["episodes"] = await episodes.delete_agent_episodes(conn, tenant_id, agent)
            await agents.delete_agent(conn, tenant_id, agent)
    await export_area.remove_files(lib, tenant_id, exported)
    return AgentDataDeleted(
        agent_id, counts["memories"], counts["profiles"], counts["episodes"], counts["jobs"]
    )
