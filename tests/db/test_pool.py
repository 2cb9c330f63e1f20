"""Tenant transactions: custom plans by default, cached (generic) plans when asked."""

from __future__ import annotations

from service.db.pool import APP_ROLE, Database
from service.memory import tenants
from service.models import TenantId

SETTINGS = (
    "SELECT current_user, current_setting('app.tenant_id'),"
    " current_setting('plan_cache_mode') AS plans"
)


async def test_a_tenant_transaction_plans_each_statement_for_its_values_by_default(
    db: Database,
) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "plans")).id)
    async with db.tenant_tx(tenant) as conn:
        row = await conn.fetchrow(SETTINGS)
    assert row is not None
    assert tuple(row) == (APP_ROLE, str(tenant), "force_custom_plan")


async def test_cached_plans_keep_the_role_and_tenant_and_let_postgres_reuse_plans(
    db: Database,
) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "cached")).id)
    async with db.tenant_tx(tenant, cached_plans=True) as conn:
        row = await conn.fetchrow(SETTINGS)
    assert row is not None
    assert tuple(row) == (APP_ROLE, str(tenant), "auto")
    async with db.admin_conn() as conn:
        after = await conn.fetchval("SELECT current_setting('plan_cache_mode')")
    assert after == "auto"
