"""Console sessions: the server-side record behind a web console cookie (docs/console.md).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04

A person signs in to ``/console`` by pasting an API key; the browser then holds only a
random session id in a cookie, and this table holds its SHA-256 with the key it was
opened from. A session is valid while it has been used within its idle limit, has not
reached its absolute expiry, and its key is neither revoked nor expired: every request
checks all three in the database, so revoking the key ends its sessions on every replica
at once. Like ``oauth_tokens``: a tenant table (``tenant_id`` in every key, row-level
security with the usual ``tenant_isolation`` policy), not forced, because a presented
session id is resolved by its hash before its tenant is known (owner role);
``cpersona_app`` has no privilege on it.

Operators (``key create --role operator``) are not tied to a tenant: their keys are rows
of ``operator_keys`` (control plane, like ``api_keys``: a prefix, a hash, no tenant) and
their console sessions rows of ``console_operator_sessions``. An operator sees tenants'
aggregates (counts, usage, queue health), never memory content.

Online on a populated database: the tables are new and empty; the foreign key to
``api_keys`` registers under a short lock with nothing to validate.
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

UPGRADE = r"""
SET LOCAL lock_timeout = '5s';
CREATE TABLE console_sessions (
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    session_hash  bytea       NOT NULL,
    key_prefix    text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    seen_at       timestamptz NOT NULL DEFAULT now(),
    idle_seconds  integer     NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, session_hash),
    CONSTRAINT console_sessions_idle_positive CHECK (idle_seconds > 0),
    FOREIGN KEY (tenant_id, key_prefix) REFERENCES api_keys (tenant_id, prefix) ON DELETE CASCADE
);
CREATE INDEX console_sessions_lookup ON console_sessions (session_hash);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
COMMENT ON TABLE console_sessions IS 'Signed-in web console sessions (docs/console.md). Valid while used within idle_seconds, before expires_at, and while the key it was opened from is neither revoked nor expired (checked on every request).';
COMMENT ON COLUMN console_sessions.session_hash IS 'SHA-256 of the session id; the id itself is only in the browser''s cookie.';
COMMENT ON COLUMN console_sessions.key_prefix IS 'KEY_ID of the API key pasted at sign-in: the session has exactly its grants and tool set, and its revocation ends the session.';
COMMENT ON COLUMN console_sessions.seen_at IS 'Last request of the session; past idle_seconds without one the session has ended.';
COMMENT ON COLUMN console_sessions.idle_seconds IS 'CPERSONA_CONSOLE_IDLE_MINUTES at sign-in, in seconds.';
COMMENT ON COLUMN console_sessions.expires_at IS 'Absolute end of the session (sign-in plus CPERSONA_CONSOLE_SESSION_HOURS), however active it is.';
COMMENT ON INDEX console_sessions_lookup IS 'A presented session id is found by its hash before its tenant is known.';
COMMENT ON INDEX console_sessions_expiry IS 'Lookup of ended sessions for deletion.';
CREATE TABLE operator_keys (
    prefix      text        NOT NULL PRIMARY KEY,
    key_hash    bytea       NOT NULL,
    label       text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    revoked_at  timestamptz
);
COMMENT ON TABLE operator_keys IS 'Operator keys (key create --role operator): not tied to a tenant; they open the console''s operator view (tenants'' aggregates, never memory content) and nothing else. The application role cannot read this table.';
COMMENT ON COLUMN operator_keys.prefix IS 'Public lookup id (the KEY_ID), like api_keys.prefix.';
COMMENT ON COLUMN operator_keys.key_hash IS 'SHA-256 of the whole key; the key itself is shown once.';
COMMENT ON COLUMN operator_keys.label IS 'What the key is for (shown by key list).';
COMMENT ON COLUMN operator_keys.revoked_at IS 'When the key was revoked (NULL: active); revocation ends its console sessions.';
CREATE TABLE console_operator_sessions (
    session_hash  bytea       NOT NULL PRIMARY KEY,
    key_prefix    text        NOT NULL REFERENCES operator_keys (prefix) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    seen_at       timestamptz NOT NULL DEFAULT now(),
    idle_seconds  integer     NOT NULL CHECK (idle_seconds > 0),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX console_operator_sessions_expiry ON console_operator_sessions (expires_at);
COMMENT ON TABLE console_operator_sessions IS 'Console sessions of operator keys: like console_sessions, without a tenant.';
COMMENT ON COLUMN console_operator_sessions.session_hash IS 'SHA-256 of the session id; the id itself is only in the browser''s cookie.';
COMMENT ON COLUMN console_operator_sessions.key_prefix IS 'KEY_ID of the operator key pasted at sign-in; its revocation ends the session.';
COMMENT ON COLUMN console_operator_sessions.seen_at IS 'Last request of the session; past idle_seconds without one the session has ended.';
COMMENT ON COLUMN console_operator_sessions.idle_seconds IS 'CPERSONA_CONSOLE_IDLE_MINUTES at sign-in, in seconds.';
COMMENT ON INDEX console_operator_sessions_expiry IS 'Lookup of ended sessions for deletion.';
ALTER TABLE console_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON console_sessions
    USING (tenant_id = app_current_tenant()) WITH CHECK (tenant_id = app_current_tenant());
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS console_operator_sessions;
DROP TABLE IF EXISTS operator_keys;
DROP TABLE IF EXISTS console_sessions;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
