"""The owner may switch to cpersona_app on Postgres 16+ (the SET privilege).

Revision ID: 0011
Revises: 0008
Create Date: 2026-12-01

Every tenant transaction switches to ``cpersona_app`` with ``set_config('role', ...,
true)``, which needs the SET privilege on that role. Migration 0001 grants membership
only when ``pg_has_role(current_user, 'cpersona_app', 'MEMBER')`` is false. On
Postgres 16+ a non-superuser owner with CREATEROLE that created the role holds it
WITH ADMIN OPTION only (no SET, no INHERIT): that counts as MEMBER, so 0001 skipped
the grant and every request failed with "permission denied to set role
cpersona_app". Merged migrations are never edited, so this one checks the right
privilege and grants what is missing.

``ensure_app_role_membership()`` does the check and the grant and stays in the schema:
an operator who changes the database owner runs ``SELECT
ensure_app_role_membership();`` as the new owner. It reports ``superuser`` (nothing
needed), ``member`` (already able to switch) or ``granted``; a role that may not grant
itself the role gets an error whose hint is the GRANT a superuser must run.

The downgrade drops the function and keeps the grant: every revision needs it.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0008"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE FUNCTION ensure_app_role_membership() RETURNS text
    LANGUAGE plpgsql
AS $$
DECLARE
    me name := current_user;
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = me) THEN
        RETURN 'superuser';
    END IF;
    IF current_setting('server_version_num')::int < 160000 THEN
        IF pg_has_role(me, 'cpersona_app', 'MEMBER') THEN
            RETURN 'member';
        END IF;
        EXECUTE format('GRANT cpersona_app TO %I', me);
        RETURN 'granted';
    END IF;
    IF pg_has_role(me, 'cpersona_app', 'SET') THEN
        RETURN 'member';
    END IF;
    EXECUTE format('GRANT cpersona_app TO %I WITH SET TRUE', me);
    RETURN 'granted';
EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
    RAISE EXCEPTION 'role % cannot switch to cpersona_app and may not grant it to itself', me
        USING HINT = format(
            'As a superuser or a role with ADMIN OPTION on cpersona_app: '
            'GRANT cpersona_app TO %I WITH SET TRUE', me);
END
$$;
COMMENT ON FUNCTION ensure_app_role_membership() IS
    'Lets the current (owner) role switch to cpersona_app: on Postgres 16+ checks the SET privilege (ADMIN OPTION alone is not enough) and grants it when missing. Returns superuser, member or granted. Run it as a new owner after changing the database owner.';
REVOKE EXECUTE ON FUNCTION ensure_app_role_membership() FROM PUBLIC;
SELECT ensure_app_role_membership();
"""

DOWNGRADE = r"""
DROP FUNCTION ensure_app_role_membership();
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
