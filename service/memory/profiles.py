"""Agent profiles: one free-text row per agent, capped (docs/tools.md, "update_profile").

Answers are typed records (:class:`Profile`, :data:`ProfileUpdate`); the MCP boundary renders
them (``service.mcp.render.writes``).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from service.db import agents, profiles
from service.memory import text
from service.memory.library import Library
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class Profile:
    """An agent's profile text, empty when it has none."""

    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class ProfileUpdated:
    """The profile was replaced; ``truncated`` when it was cut to the profile limit."""

    truncated: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class ProfileUnchanged:
    """Nothing to store, so the previous profile stays: why."""

    reason: Literal["empty profile", "empty after sanitization"]


ProfileUpdate = ProfileUpdated | ProfileUnchanged


async def get_profile(lib: Library, tenant_id: TenantId, agent_id: str) -> Profile:
    """The agent's profile, empty when the agent has none."""
    async with lib.db.tenant_tx(tenant_id) as conn:
        content = await profiles.profile_content(conn, tenant_id, agent_id)
    return Profile(content or "")


async def update_profile(
    lib: Library, tenant_id: TenantId, agent_id: str, profile: str
) -> ProfileUpdate:
    """Replace the profile; empty input leaves the previous one in place."""
    if not profile:
        return ProfileUnchanged("empty profile")
    clean = text.sanitise(profile, lib.settings.max_profile_length)
    if not clean.text:
        return ProfileUnchanged("empty after sanitization")
    async with lib.db.tenant_tx(tenant_id) as conn:
        agent = await agents.ensure_agent(conn, tenant_id, agent_id)
        await profiles.upsert_profile(conn, tenant_id, agent, clean.text)
    return ProfileUpdated(clean.truncated)
