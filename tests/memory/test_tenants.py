"""API key lifecycle: creation, authentication, revocation, expiry, malformed keys."""

from __future__ import annotations

import pytest

from service.db.pool import Database
from service.errors import Conflict, InvalidInput, NotFound
from service.memory import tenants


async def test_a_new_key_authenticates_to_its_tenant_with_its_grants(db: Database) -> None:
    tenant = await tenants.create_tenant(db, "acme", "Acme")
    key = await tenants.create_key(db, "acme", label="ci", grants={"alpha": "read"})
    caller = await tenants.authenticate(db, key)
    assert caller is not None
    assert caller.tenant_id == tenant.id
    assert caller.tenant_slug == "acme"
    assert caller.grants == {"alpha": "read"}
    assert caller.key_id == key[: tenants.PREFIX_LENGTH]
    assert caller.label == "ci"


async def test_keys_are_stored_only_as_hashes(db: Database) -> None:
    await tenants.create_tenant(db, "hashes")
    key = await tenants.create_key(db, "hashes")
    async with db.admin_tx() as conn:
        row = await conn.fetchrow("SELECT * FROM api_keys")
    assert row is not None
    assert key not in {str(value) for value in row.values()}
    assert bytes(row["key_hash"]) == tenants.hash_key(key)


async def test_revoked_key_fails_and_other_keys_keep_working(db: Database) -> None:
    await tenants.create_tenant(db, "rev")
    doomed = await tenants.create_key(db, "rev")
    kept = await tenants.create_key(db, "rev")
    await tenants.revoke_key(db, doomed[: tenants.PREFIX_LENGTH])
    assert await tenants.authenticate(db, doomed) is None
    assert await tenants.authenticate(db, kept) is not None


async def test_expired_key_fails(db: Database) -> None:
    await tenants.create_tenant(db, "exp")
    key = await tenants.create_key(db, "exp", expires_in_days=1)
    async with db.admin_tx() as conn:
        await conn.execute("UPDATE api_keys SET expires_at = now() - interval '1 second'")
    assert await tenants.authenticate(db, key) is None


@pytest.mark.parametrize(
    "presented",
    ["", "nonsense", "cpk_000000000000_" + "A" * 43, "Bearer x", "cpk_zz_" + "a" * 40],
)
async def test_unknown_or_malformed_keys_fail(db: Database, presented: str) -> None:
    await tenants.create_tenant(db, "mal")
    await tenants.create_key(db, "mal")
    assert await tenants.authenticate(db, presented) is None


async def test_right_prefix_with_wrong_secret_fails(db: Database) -> None:
    await tenants.create_tenant(db, "forge")
    key = await tenants.create_key(db, "forge")
    forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    assert await tenants.authenticate(db, forged) is None


async def test_last_used_is_recorded(db: Database) -> None:
    await tenants.create_tenant(db, "used")
    key = await tenants.create_key(db, "used")
    await tenants.authenticate(db, key)
    (row,) = await tenants.list_keys(db, "used")
    assert row.last_used_at is not None


async def test_tenant_admin_errors_are_clear(db: Database) -> None:
    await tenants.create_tenant(db, "dupe")
    with pytest.raises(Conflict):
        await tenants.create_tenant(db, "dupe")
    with pytest.raises(InvalidInput):
        await tenants.create_tenant(db, "Bad Slug")
    with pytest.raises(NotFound):
        await tenants.create_key(db, "missing")
    with pytest.raises(NotFound):
        await tenants.revoke_key(db, "cpk_000000000000")
    with pytest.raises(InvalidInput):
        tenants.parse_grants(["alpha=write"])
    assert tenants.parse_grants([]) == {"*": "read-write"}
