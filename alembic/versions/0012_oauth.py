"""The built-in OAuth 2.1 authorization server: clients, authorization codes, tokens.

Revision ID: 0012
Revises: 0013
Create Date: 2026-12-01

A remote connector (Claude Desktop, claude.ai, ChatGPT) cannot send a static API key;
it registers itself (RFC 7591), sends a person to the consent page, where that person
pastes an API key of the tenant, and gets an authorization code, then tokens. Every
code and token is issued *from* that key: it names the key by ``(tenant_id,
key_prefix)`` and inherits its grants, so revoking or deleting the key ends every token
issued from it on the next request (authentication joins the key row).

Like ``api_keys`` these are credential tables of the control plane, read before the
tenant is known (a presented token is looked up by its hash). Only SHA-256 hashes of
codes, tokens and client secrets are stored. ``oauth_clients`` is a reference table
(not tenant data). ``oauth_codes`` and ``oauth_tokens`` are tenant tables: tenant_id in
every key, row-level security with the usual ``tenant_isolation`` policy, not forced
(the owner role resolves a presented hash across tenants, as the queue worker does with
``embedding_jobs``); ``cpersona_app`` has no privilege on any of them.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0013"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE api_keys ADD CONSTRAINT api_keys_tenant_prefix_key UNIQUE (tenant_id, prefix);
COMMENT ON CONSTRAINT api_keys_tenant_prefix_key ON api_keys IS 'Target of the OAuth tables'' foreign keys: a code or token names the key it was issued from.';

CREATE TABLE oauth_clients (
    client_id    text        NOT NULL PRIMARY KEY,
    secret_hash  bytea,
    metadata     jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT oauth_clients_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
);
COMMENT ON TABLE oauth_clients IS 'OAuth clients registered dynamically (RFC 7591) with the built-in authorization server. Not tenant data: a client registers before any person authorizes it for a tenant.';
COMMENT ON COLUMN oauth_clients.client_id IS 'The random client_id handed out at registration.';
COMMENT ON COLUMN oauth_clients.secret_hash IS 'SHA-256 of the client secret of a confidential client; NULL for a public client (PKCE only).';
COMMENT ON COLUMN oauth_clients.metadata IS 'The registered client metadata (redirect_uris matched exactly, grant_types, client_name, token_endpoint_auth_method).';

CREATE TABLE oauth_codes (
    tenant_id       uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    code_hash       bytea       NOT NULL,
    key_prefix      text        NOT NULL,
    client_id       text        NOT NULL,
    redirect_uri    text        NOT NULL,
    code_challenge  text        NOT NULL,
    resource        text        NOT NULL,
    scope           text        NOT NULL DEFAULT '',
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, code_hash),
    FOREIGN KEY (tenant_id, key_prefix) REFERENCES api_keys (tenant_id, prefix) ON DELETE CASCADE
);
CREATE INDEX oauth_codes_lookup ON oauth_codes (code_hash);
COMMENT ON INDEX oauth_codes_lookup IS 'A presented code is found by its hash before its tenant is known (not unique: a unique key must include tenant_id; 256-bit random codes do not collide).';
COMMENT ON COLUMN oauth_codes.client_id IS 'The client the code was issued to; only it may redeem it.';
COMMENT ON COLUMN oauth_codes.redirect_uri IS 'The redirect URI of the authorization request; a token request naming another is refused.';
COMMENT ON COLUMN oauth_codes.scope IS 'The scope the client asked for (echoed in the token response; grants come from the key).';
COMMENT ON TABLE oauth_codes IS 'Authorization codes waiting for their token request: single use (taken with DELETE ... RETURNING), short-lived, bound to client, redirect URI, PKCE challenge (S256) and resource.';
COMMENT ON COLUMN oauth_codes.code_hash IS 'SHA-256 of the code; the code itself is only in the redirect to the client.';
COMMENT ON COLUMN oauth_codes.key_prefix IS 'KEY_ID of the API key pasted on the consent page: the tokens get its grants.';
COMMENT ON COLUMN oauth_codes.code_challenge IS 'PKCE S256 challenge the token request''s code_verifier must match.';
COMMENT ON COLUMN oauth_codes.resource IS 'RFC 8707 resource (the public MCP URL) the tokens are bound to.';

CREATE TABLE oauth_tokens (
    tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    token_hash   bytea       NOT NULL,
    kind         text        NOT NULL,
    key_prefix   text        NOT NULL,
    client_id    text        NOT NULL,
    resource     text        NOT NULL,
    scope        text        NOT NULL DEFAULT '',
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, token_hash),
    CONSTRAINT oauth_tokens_kind CHECK (kind IN ('access', 'refresh')),
    FOREIGN KEY (tenant_id, key_prefix) REFERENCES api_keys (tenant_id, prefix) ON DELETE CASCADE
);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);
CREATE INDEX oauth_tokens_lookup ON oauth_tokens (token_hash);
COMMENT ON INDEX oauth_tokens_lookup IS 'A presented token is found by its hash before its tenant is known (not unique, like oauth_codes_lookup).';
COMMENT ON COLUMN oauth_tokens.client_id IS 'The client the token was issued to; a refresh token is exchanged only by it.';
COMMENT ON COLUMN oauth_tokens.scope IS 'The scope granted (informational; grants come from the key).';
COMMENT ON TABLE oauth_tokens IS 'Access and refresh tokens of the built-in authorization server. A token is valid while it has not expired and the key it was issued from is neither revoked nor expired; a refresh token is used once (rotation).';
COMMENT ON COLUMN oauth_tokens.token_hash IS 'SHA-256 of the token; the token itself is only in the token response.';
COMMENT ON COLUMN oauth_tokens.kind IS 'access (sent as Bearer to /mcp) or refresh (exchanged once at /token for a new pair).';
COMMENT ON COLUMN oauth_tokens.key_prefix IS 'KEY_ID of the API key the token was issued from: its grants, and its revocation, apply.';
COMMENT ON COLUMN oauth_tokens.resource IS 'RFC 8707 audience: the public MCP URL the token is good for.';
COMMENT ON INDEX oauth_tokens_expiry IS 'Lookup of expired tokens for deletion.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['oauth_codes', 'oauth_tokens'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_current_tenant()) '
            'WITH CHECK (tenant_id = app_current_tenant())', t);
    END LOOP;
END
$$;
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS oauth_tokens;
DROP TABLE IF EXISTS oauth_codes;
DROP TABLE IF EXISTS oauth_clients;
ALTER TABLE api_keys DROP CONSTRAINT IF EXISTS api_keys_tenant_prefix_key;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
