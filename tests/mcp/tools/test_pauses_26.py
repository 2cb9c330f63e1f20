"""The bound on session pauses (docs/tools.md, "pause_persistence"; docs/reliability.md,
"CPersona 2.6 changes to the existing tools"): at most 256 session keys of one tenant hold a
pause in force, as CPersona 2.6 bounds its process."""

from __future__ import annotations

from service.memory import pauses
from service.memory.library import Library
from service.models import TenantId
from tests.support import Agent, Served, new_tenant


async def _tenant_id(lib: Library, slug: str) -> TenantId:
    async with lib.db.admin_tx() as conn:
        return TenantId(await conn.fetchval("SELECT id FROM tenants WHERE slug = $1", slug))


async def test_a_257th_live_session_pause_is_refused_and_nothing_is_revoked(
    lib: Library, served: Served, client: Agent
) -> None:
    tenant = await _tenant_id(lib, "acme")
    async with lib.db.admin_tx() as conn:
        await conn.execute(
            "INSERT INTO persistence_pauses (tenant_id, session_key, expires_at, created_by) "
            "SELECT $1, 's' || n, now() + interval '1 hour', 'test' "
            "FROM generate_series(1, $2) AS n",
            tenant,
            pauses.MAX_PAUSED_SESSIONS,
        )
        await conn.execute(
            "INSERT INTO persistence_pauses (tenant_id, session_key, expires_at, created_by) "
            "VALUES ($1, 'gone', now() - interval '1 second', 'test')",
            tenant,
        )
    refused = await client.call("pause_persistence", session_key="one-more")
    assert refused.get("ok") is False, refused
    assert refused["error"].startswith(
        "persistence was NOT paused: 256 session keys of this tenant already hold a pause"
    )
    status = await client.call("persistence_status", session_key="one-more")
    assert status["paused"] is False
    again = await client.call("pause_persistence", session_key="s1", ttl_seconds=60)
    assert (again["paused"], again["scope"]) == (True, "session")
    tenant_wide = await client.call("pause_persistence", ttl_seconds=60)
    assert (tenant_wide["paused"], tenant_wide["scope"]) == (True, "tenant")
    other = Agent(served, await new_tenant(lib, "other"))
    assert (await other.call("pause_persistence", session_key="one-more"))["paused"] is True
    await client.call("resume_persistence", session_key="s2")
    freed = await client.call("pause_persistence", session_key="one-more")
    assert freed["paused"] is True


async def test_a_session_key_argument_picks_the_session_pause_like_the_header(
    client: Agent,
) -> None:
    """Acceptance 49: a CPersona 2.6 client names its session in ``session_key`` on every
    tool; here the argument counts as the ``X-CPersona-Session`` header does, so a store of
    the paused key is skipped, another key's and a keyless store are written, and keyless
    ``persistence_status`` says ``paused: false``."""
    paused = await client.call("pause_persistence", session_key="s1", ttl_seconds=60)
    assert paused["scope"] == "session"
    skipped = await client.call("store", agent_id="a", content="one", session_key="s1")
    assert (skipped["result"], skipped["persisted"]) == ("skipped", False)
    other = await client.call("store", agent_id="a", content="two", session_key="s2")
    keyless = await client.call("store", agent_id="a", content="three")
    assert (other["result"], keyless["result"]) == ("stored", "stored")
    assert (await client.call("persistence_status"))["paused"] is False
    episode = await client.call("archive_episode", agent_id="a", summary="s", session_key="s1")
    assert episode["persisted"] is False
    odd = await client.call("store", agent_id="a", content="four", session_key="ü" * 300)
    assert odd["result"] == "stored"  # no pause can have such a key: it names no session
