"""Agent profiles: one free-text row per agent, capped (docs/tools.md, "update_profile")."""

from __future__ import annotations

from service.db import agents, profiles
from service.memory import text
from service.memory.library import Library
from service.models import JsonObject, TenantId


async def get_profile(lib: Library, tenant_id: TenantId, agent_id: str) -> JsonObject:
    """``{"profile": text}``, empty when the agent has none."""
    async with lib.db.tenant_tx(tenant_id) as conn:
        content = await profiles.profile_content(conn, tenant_id, agent_id)
    return {"profile": content or ""}


async def update_profile(
    lib: Library, tenant_id: TenantId, agent_id: str, profile: str
) -> JsonObject:
    """Replace the profile; empty input leaves the previous one in place."""
    if not profile:
        return {"ok": True, "profiles_updated": 0, "reason": "empty profile"}
    clean = text.sanitise(profile, lib.settings.max_profile_length)
    if not clean.text:
        return {"ok": True, "profiles_updated": 0, "reason": "empty after sanitization"}
    async with lib.db.tenant_tx(tenant_id) as conn:
        agent = await agents.ensure_agent(conn, tenant_id, agent_id)
        await profiles.upsert_profile(conn, tenant_id, agent, clean.text)
    body: JsonObject = {"ok": True, "profiles_updated": 1}
    if clean.truncated:
        body["truncated"] = True
    return body
