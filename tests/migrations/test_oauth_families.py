"""Migration 0015 on a database with live OAuth grants: codes and tokens issued before
the upgrade (no family yet) keep working, join a family on their next use, and a replay
of them afterwards revokes that family like any other."""

from __future__ import annotations

import hashlib
import uuid

import pytest

from service.app.oauth import server
from service.app.oauth.refusals import GrantReplayed
from service.db import migrate
from service.memory.library import Library
from tests.support import new_tenant

LIFETIMES = server.Lifetimes(access_seconds=3600, refresh_seconds=86_400)
RESOURCE = "https://mem.example/mcp"
TOKEN = (
    "INSERT INTO oauth_tokens (tenant_id, token_hash, kind, key_prefix, client_id, resource,"
    " expires_at) VALUES ($1, $2, $3, $4, 'old-client', $5, now() + interval '1 hour')"
)
CODE = (
    "INSERT INTO oauth_codes (tenant_id, code_hash, key_prefix, client_id, redirect_uri,"
    " code_challenge, resource, expires_at)"
    " VALUES ($1, $2, $3, 'old-client', 'http://127.0.0.1:9/cb', $4, $5, now() + interval '2 min')"
)


def _hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


async def _populate(lib: Library, key: str, verifier: str) -> uuid.UUID:
    """A pair and a pending code of revision 0014 (written as its code wrote them)."""
    async with lib.db.admin_tx() as conn:
        tenant = await conn.fetchval("SELECT tenant_id FROM api_keys WHERE prefix = $1", key[:16])
        for kind, token in (("access", "cpo_old"), ("refresh", "cpr_old")):
            await conn.execute(TOKEN, tenant, _hash(token), kind, key[:16], RESOURCE)
        await conn.execute(
            CODE, tenant, _hash("old-code"), key[:16], server.s256(verifier), RESOURCE
        )
    return uuid.UUID(str(tenant))


async def test_grants_issued_before_the_upgrade_keep_working_and_join_a_family(
    lib: Library, database_url: str
) -> None:
    migrate.downgrade(database_url, "0014")
    key = await new_tenant(lib, "before-0015")
    verifier = "v" * 43
    await _populate(lib, key, verifier)
    migrate.upgrade(database_url)
    rotated = await server.refresh(lib.db, "cpr_old", "old-client", None, LIFETIMES)
    exchange = server.CodeExchange("old-code", "old-client", None, verifier, None)
    redeemed = await server.redeem_code(lib.db, exchange, LIFETIMES)
    with pytest.raises(GrantReplayed) as reuse:
        await server.refresh(lib.db, "cpr_old", "old-client", None, LIFETIMES)
    assert reuse.value.tokens_revoked == 3  # the rotated token and the pair it got
    assert await server.authenticate(lib.db, rotated.access_token, RESOURCE) is None
    assert await server.authenticate(lib.db, redeemed.access_token, RESOURCE) is not None
    with pytest.raises(GrantReplayed) as replay:
        await server.redeem_code(lib.db, exchange, LIFETIMES)
    assert replay.value.tokens_revoked == 2
    assert await server.authenticate(lib.db, redeemed.access_token, RESOURCE) is None
