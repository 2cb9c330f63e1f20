"""The session ledger of recall deliveries and token counts in the daily usage.

Revision ID: 0009
Revises: 0011
Create Date: 2026-12-04

``recall_ledger`` remembers, per tenant and session (``X-CPersona-Session``, or the key
for a caller that asks with ``novel_only`` and names no session), which rows a recall
delivered whole, until ``expires_at``: a later recall of the same session sends those
rows as a ``{ref, seen: true}`` stub. It lives in Postgres so every replica sees every
delivery. Each recall reads and writes it in one statement, which also removes the
tenant's expired rows and keeps each session to a bounded number of rows.

``usage_daily`` gains the token counts of the answers (``tokens_delivered``) and what
previews, excerpts, ``max_tokens`` budgets and the ledger held back; ``ops.usage_daily``
shows them.
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0011"
branch_labels = None
depends_on = None

TOKEN_COLUMNS = {
    "tokens_delivered": "Estimated tokens of every answer sent (chars/4, or CPERSONA_TOKENIZER).",
    "tokens_saved_previews": "Tokens of row text held back by previews (rows without an excerpt).",
    "tokens_saved_excerpts": "Tokens of row text held back on trimmed rows whose excerpt shows the matching passage.",
    "tokens_saved_budgets": "Tokens of rows a max_tokens budget left for a later page (next_cursor).",
    "tokens_saved_ledger": "Tokens of rows sent as {ref, seen: true} because the session already held them.",
}

USAGE_VIEW = """
{create} VIEW ops.usage_daily WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug, u.day, u.tool, u.calls, u.failures, u.bytes_out,
       u.chars_returned, u.chars_saved{tokens}
FROM public.usage_daily u
JOIN public.tenants t ON t.id = u.tenant_id;
GRANT SELECT ON ops.usage_daily TO cpersona_ops;
"""
KEPT_COMMENTS = {
    "day": "UTC day.",
    "failures": "Calls answered with a tool failure or an error.",
    "bytes_out": "Response body bytes sent.",
    "chars_returned": "Content characters returned in responses.",
    "chars_saved": "Content characters left out by previews (agents can fetch them with get_contents).",
}  # fmt: skip
NEW_VIEW_COMMENT = "Tool calls per tenant, UTC day and tool: response bytes and tokens, content characters returned, and what previews, excerpts, budgets and the session ledger held back."
OLD_VIEW_COMMENT = "Tool calls per tenant, UTC day and tool: response bytes, content characters returned and saved by previews."

LEDGER = r"""
CREATE TABLE recall_ledger (
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    session_key   text        NOT NULL,
    kind          text        NOT NULL CHECK (kind IN ('mem', 'ep')),
    row_id        bigint      NOT NULL,
    delivered_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, session_key, kind, row_id)
);
CREATE INDEX recall_ledger_expiry ON recall_ledger (tenant_id, expires_at);
CREATE INDEX recall_ledger_recent ON recall_ledger (tenant_id, session_key, delivered_at);
COMMENT ON TABLE recall_ledger IS 'Rows recall delivered whole to a session (no repeats within a session): a later recall of the session sends them as {ref, seen: true} until expires_at.';
COMMENT ON COLUMN recall_ledger.session_key IS 'The X-CPersona-Session value, or key:<KEY_ID> for novel_only calls that name no session.';
COMMENT ON COLUMN recall_ledger.kind IS 'mem (memories.id) or ep (episodes.id): the row is the ref kind:row_id.';
COMMENT ON COLUMN recall_ledger.row_id IS 'memories.id or episodes.id (see kind) of the same tenant; no foreign key, a deleted row simply never comes back.';
COMMENT ON COLUMN recall_ledger.delivered_at IS 'Latest whole delivery; the oldest rows of a session go first past its bound.';
COMMENT ON COLUMN recall_ledger.expires_at IS 'The delivery is forgotten after this (CPERSONA_SESSION_DEDUP_TTL); expired rows are deleted by later recalls of the tenant.';
ALTER TABLE recall_ledger ENABLE ROW LEVEL SECURITY;
ALTER TABLE recall_ledger FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON recall_ledger USING (tenant_id = app_current_tenant())
    WITH CHECK (tenant_id = app_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON recall_ledger TO cpersona_app;
"""


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _usage_view(*, with_tokens: bool) -> str:
    """ops.usage_daily with or without the token columns; recreated (the downgrade), it
    gets back the comments 0004 gave it."""
    tokens = "".join(f", u.{name}" for name in TOKEN_COLUMNS) if with_tokens else ""
    create = "CREATE OR REPLACE" if with_tokens else "CREATE"
    comment = NEW_VIEW_COMMENT if with_tokens else OLD_VIEW_COMMENT
    lines = [f"COMMENT ON VIEW ops.usage_daily IS {_quoted(comment)};"]
    if not with_tokens:
        lines += [
            f"COMMENT ON COLUMN ops.usage_daily.{name} IS {_quoted(text)};"
            for name, text in KEPT_COMMENTS.items()
        ]
    return USAGE_VIEW.format(create=create, tokens=tokens) + "\n".join(lines)


def upgrade() -> None:
    op.execute(LEDGER)
    op.execute(
        "\n".join(
            f"ALTER TABLE usage_daily ADD COLUMN {name} bigint NOT NULL DEFAULT 0;"
            for name in TOKEN_COLUMNS
        )
    )
    op.execute(_usage_view(with_tokens=True))
    op.execute(
        "\n".join(
            f"COMMENT ON COLUMN {table}.{name} IS {_quoted(text)};"
            for name, text in TOKEN_COLUMNS.items()
            for table in ("usage_daily", "ops.usage_daily")
        )
    )
    op.execute(
        "COMMENT ON TABLE usage_daily IS 'Tool calls per tenant and UTC day: response bytes "
        "and tokens, content characters returned, and what previews, excerpts, budgets and "
        "the session ledger held back.';"
    )


def downgrade() -> None:
    op.execute("DROP VIEW ops.usage_daily;")
    op.execute("\n".join(f"ALTER TABLE usage_daily DROP COLUMN {name};" for name in TOKEN_COLUMNS))
    op.execute(_usage_view(with_tokens=False))
    op.execute(
        "COMMENT ON TABLE usage_daily IS 'Tool calls per tenant and UTC day: response bytes, "
        "content characters returned and saved by previews.';"
    )
    op.execute("DROP TABLE IF EXISTS recall_ledger;")
