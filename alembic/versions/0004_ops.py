"""The ops schema: readable views for operators and a read-only role to use them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

psql is a first-class operations interface (architecture §10). Schema ``ops`` holds
views over the service's tables that answer the usual questions (who are the tenants,
how big are the agents, is the embedding queue keeping up, what did each tenant use,
which rows are largest, which scopes are paused) without exposing secrets or content.
Role ``cpersona_ops`` (NOLOGIN) may read those views and nothing else; an operator
grants it to a login role. This revision also comments the columns earlier
revisions left undocumented.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# Tables the views read that force row-level security on their owner.
OPS_READ_TABLES = (
    "agents", "memories", "episodes", "embedding_jobs", "persistence_pauses", "usage_daily",
)  # fmt: skip

COLUMN_COMMENTS = {
    "tenants.name": "Display name for operators (free text, may be empty).",
    "api_keys.label": "Operator's note on what the key is for (shown by key list).",
    "api_keys.expires_at": "The key stops working at this time; NULL = never expires.",
    "api_keys.revoked_at": "Set by key revoke; a revoked key is refused on the next request.",
    "agents.tenant_id": "The tenant the agent belongs to; agent names are unique per tenant.",
    "agents.id": "Internal agent id referenced by memories, episodes and profiles (agent_id).",
    "memories.agent_id": "The owning agent: agents.id within the same tenant (not the name).",
    "memories.content": "The memory text, sanitised and capped at CPERSONA_MAX_CONTENT_LENGTH.",
    "memories.metadata": "The caller's message.metadata object, stored as given.",
    "memories.last_recalled_at": "When recall last returned the row with confidence scoring on.",
    "memories.created_at": "When the row was stored (server clock); orders newest-first lists.",
    "memories.updated_at": "When content, source, timestamp or channel last changed.",
    "episodes.agent_id": "The owning agent: agents.id within the same tenant (not the name).",
    "episodes.project_id": "Project bucket; empty string is the global pool.",
    "episodes.channel": "Channel axis; empty string rows are visible from every channel.",
    "episodes.summary": "The session summary the agent computed (sanitised, capped).",
    "episodes.keywords": "Search keywords given with the summary (space separated).",
    "episodes.embedding": "Unit-length embedding of summary and keywords; NULL until embedded.",
    "episodes.embedding_model": "Model that produced embedding, so a model change is detectable.",
    "profiles.agent_id": "The owning agent: agents.id within the same tenant (not the name).",
    "profiles.user_id": "Always empty today: one profile per agent (CPersona's user_id axis).",
    "profiles.project_id": "Written as empty: profiles are global per agent.",
    "profiles.content": "The profile text, capped at CPERSONA_MAX_PROFILE_LENGTH.",
    "embedding_settings.id": "Always true: makes the table a single row.",
    "embedding_settings.model": "Embedding model the deployment last started with.",
    "embedding_settings.dimension": "Vector width of that model.",
    "embedding_jobs.item_id": "memories.id or episodes.id (see item_kind) of the same tenant.",
    "embedding_jobs.last_error": "Why the last attempt failed (provider error), NULL if none.",
    "recall_calibration.agent_id": "agents.id of the calibrated agent; NULL = tenant-wide.",
    "recall_calibration.fused_gate_signal": "Which fused score the gate applies to (rrf, rsf...).",
    "recall_calibration.precision_label": "strict, balanced, lenient or custom (see beta).",
    "recall_calibration.embedding_model": "Model the calibration was measured with.",
    "recall_calibration.embedding_dim": "Vector width the calibration was measured with.",
    "recall_calibration.scoring_version": "Recall scoring version calibrated against.",
    "recall_calibration.calibrated_at": "When the thresholds were last measured.",
    "persistence_pauses.session_key": "'' = the whole tenant; else the X-CPersona-Session key.",
    "persistence_pauses.expires_at": "The pause ends at this time (database clock).",
    "embedding_health.state": "unknown, healthy, hint (degraded advisory) or fault.",
    "embedding_health.long_form_sent": "Whether the long runbook advisory was already shown.",
    "embedding_health.consecutive_failures": "Provider failures in a row since the last success.",
    "usage_daily.day": "UTC day.",
    "usage_daily.tool": "MCP tool name.",
    "usage_daily.failures": "Calls answered with a tool failure or an error.",
    "usage_daily.bytes_out": "Response body bytes sent.",
    "usage_daily.chars_returned": "Content characters returned in responses.",
    "usage_daily.chars_saved": "Content characters left out by previews (fetchable in full).",
}

VIEWS = r"""
CREATE SCHEMA ops;
COMMENT ON SCHEMA ops IS 'Read-only views for operators (psql): tenants, agents, embedding backlog, usage, largest rows, pauses. Readable by role cpersona_ops; never exposes key hashes or memory content.';

-- Every view is security_invoker = false, deliberately: it reads the tables with the
-- rights of its owner (the migration role), so cpersona_ops needs no privilege on any
-- table and sees exactly the columns the view selects. Tenant row-level security
-- still applies to an owner that is neither superuser nor BYPASSRLS on tables that
-- FORCE it; the ops_read policies below admit rows there when the *invoking* role
-- (current_user is not changed by a view) holds cpersona_ops privileges.

CREATE VIEW ops.tenants WITH (security_invoker = false) AS
SELECT t.id AS tenant_id, t.slug, t.name, t.created_at,
       count(k.id) FILTER (WHERE k.revoked_at IS NULL
                             AND (k.expires_at IS NULL OR k.expires_at > now())) AS active_keys,
       count(k.id) AS total_keys,
       max(k.last_used_at) AS last_key_used_at
FROM public.tenants t
LEFT JOIN public.api_keys k ON k.tenant_id = t.id
GROUP BY t.id, t.slug, t.name, t.created_at;
COMMENT ON VIEW ops.tenants IS 'Tenants with their API key counts and last key use (never key hashes or prefixes).';
COMMENT ON COLUMN ops.tenants.active_keys IS 'Keys neither revoked nor expired.';
COMMENT ON COLUMN ops.tenants.total_keys IS 'Every key ever created for the tenant, revoked and expired included.';
COMMENT ON COLUMN ops.tenants.last_key_used_at IS 'Latest use of any of its keys (recorded at most once a minute per key).';

CREATE VIEW ops.agents WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug, a.name AS agent, a.id AS agent_id, a.created_at,
       coalesce(m.memories, 0) AS memories, coalesce(m.locked, 0) AS locked_memories,
       coalesce(e.episodes, 0) AS episodes,
       coalesce(m.bytes, 0) + coalesce(e.bytes, 0) AS content_bytes,
       greatest(m.last_write, e.last_write) AS last_write
FROM public.agents a
JOIN public.tenants t ON t.id = a.tenant_id
LEFT JOIN LATERAL (
    SELECT count(*) AS memories, count(*) FILTER (WHERE x.locked) AS locked,
           sum(octet_length(x.content)) AS bytes, max(x.updated_at) AS last_write
    FROM public.memories x WHERE x.tenant_id = a.tenant_id AND x.agent_id = a.id
) m ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS episodes, sum(octet_length(y.summary) + octet_length(y.keywords)) AS bytes,
           max(y.created_at) AS last_write
    FROM public.episodes y WHERE y.tenant_id = a.tenant_id AND y.agent_id = a.id
) e ON true;
COMMENT ON VIEW ops.agents IS 'One row per agent: how much it stored and when it last wrote.';
COMMENT ON COLUMN ops.agents.agent IS 'The agent_id string clients use (agents.name).';
COMMENT ON COLUMN ops.agents.agent_id IS 'Internal id (agents.id) that memories and episodes reference.';
COMMENT ON COLUMN ops.agents.content_bytes IS 'UTF-8 bytes of memory content plus episode summaries and keywords.';
COMMENT ON COLUMN ops.agents.last_write IS 'Latest memory change or episode archive; NULL when it has neither.';

CREATE VIEW ops.embedding_backlog WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug,
       count(j.id) FILTER (WHERE j.attempts < 3) AS pending,
       count(j.id) FILTER (WHERE j.attempts >= 3) AS failed,
       count(j.id) FILTER (WHERE j.last_error IS NOT NULL) AS with_error,
       min(j.created_at) FILTER (WHERE j.attempts < 3) AS oldest_pending_at,
       (SELECT count(*) FROM public.memories m
        WHERE m.tenant_id = t.id AND m.embedding IS NULL) AS unembedded_memories,
       (SELECT count(*) FROM public.episodes e
        WHERE e.tenant_id = t.id AND e.embedding IS NULL) AS unembedded_episodes
FROM public.tenants t
LEFT JOIN public.embedding_jobs j ON j.tenant_id = t.id
GROUP BY t.id, t.slug;
COMMENT ON VIEW ops.embedding_backlog IS 'The embedding queue per tenant: jobs waiting, jobs given up on, rows still without a vector.';
COMMENT ON COLUMN ops.embedding_backlog.pending IS 'Jobs below the retry limit (3, the CPERSONA_TASK_MAX_RETRIES default): the worker will still run them.';
COMMENT ON COLUMN ops.embedding_backlog.failed IS 'Jobs at the retry limit: kept for inspection (see embedding_jobs.last_error), not retried; check_health(fix) re-arms them.';
COMMENT ON COLUMN ops.embedding_backlog.with_error IS 'Jobs whose last attempt failed.';
COMMENT ON COLUMN ops.embedding_backlog.oldest_pending_at IS 'Enqueue time of the oldest pending job: a growing age means no worker drains the queue.';
COMMENT ON COLUMN ops.embedding_backlog.unembedded_memories IS 'Memories without a vector (recall finds them lexically only).';
COMMENT ON COLUMN ops.embedding_backlog.unembedded_episodes IS 'Episodes without a vector.';

CREATE VIEW ops.usage_daily WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug, u.day, u.tool, u.calls, u.failures, u.bytes_out,
       u.chars_returned, u.chars_saved
FROM public.usage_daily u
JOIN public.tenants t ON t.id = u.tenant_id;
COMMENT ON VIEW ops.usage_daily IS 'Tool calls per tenant, UTC day and tool: response bytes, content characters returned and saved by previews.';
COMMENT ON COLUMN ops.usage_daily.day IS 'UTC day.';
COMMENT ON COLUMN ops.usage_daily.failures IS 'Calls answered with a tool failure or an error.';
COMMENT ON COLUMN ops.usage_daily.bytes_out IS 'Response body bytes sent.';
COMMENT ON COLUMN ops.usage_daily.chars_returned IS 'Content characters returned in responses.';
COMMENT ON COLUMN ops.usage_daily.chars_saved IS 'Content characters left out by previews (agents can fetch them with get_contents).';

CREATE VIEW ops.largest_rows WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug, a.name AS agent, r.kind, r.id, r.kind || ':' || r.id AS ref,
       r.chars, r.bytes, r.locked, r.created_at
FROM (
    SELECT m.tenant_id, m.agent_id, 'mem' AS kind, m.id, char_length(m.content) AS chars,
           octet_length(m.content) AS bytes, m.locked, m.created_at
    FROM public.memories m
    UNION ALL
    SELECT e.tenant_id, e.agent_id, 'ep', e.id, char_length(e.summary) + char_length(e.keywords),
           octet_length(e.summary) + octet_length(e.keywords), false, e.created_at
    FROM public.episodes e
) r
JOIN public.tenants t ON t.id = r.tenant_id
JOIN public.agents a ON a.tenant_id = r.tenant_id AND a.id = r.agent_id
ORDER BY r.chars DESC, r.kind, r.id;
COMMENT ON VIEW ops.largest_rows IS 'Memories and episodes by size, largest first (sizes only, never content). Scans every row: filter by tenant_slug and add LIMIT.';
COMMENT ON COLUMN ops.largest_rows.agent IS 'The agent_id string clients use.';
COMMENT ON COLUMN ops.largest_rows.kind IS 'mem (memories) or ep (episodes).';
COMMENT ON COLUMN ops.largest_rows.ref IS 'The ref agents use with get_contents (mem:N / ep:N).';
COMMENT ON COLUMN ops.largest_rows.chars IS 'Length in code points (episodes: summary plus keywords), the unit of previews and budgets.';
COMMENT ON COLUMN ops.largest_rows.bytes IS 'UTF-8 bytes of the same text.';
COMMENT ON COLUMN ops.largest_rows.locked IS 'Locked memories cannot be edited or deleted individually (episodes: always false).';

CREATE VIEW ops.paused_scopes WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug, p.session_key,
       CASE WHEN p.session_key = '' THEN 'tenant' ELSE 'session' END AS scope,
       p.expires_at, p.expires_at - now() AS remaining, p.created_at, p.created_by
FROM public.persistence_pauses p
JOIN public.tenants t ON t.id = p.tenant_id
WHERE p.expires_at > now();
COMMENT ON VIEW ops.paused_scopes IS 'Persistence pauses in force (pause_persistence): writes of these scopes are skipped until expires_at.';
COMMENT ON COLUMN ops.paused_scopes.session_key IS 'Empty for the whole tenant; else the session (X-CPersona-Session) the pause covers.';
COMMENT ON COLUMN ops.paused_scopes.scope IS 'tenant or session.';
COMMENT ON COLUMN ops.paused_scopes.remaining IS 'Time left before the pause lapses.';
COMMENT ON COLUMN ops.paused_scopes.created_by IS 'KEY_ID of the key that paused.';
"""

ROLE = r"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cpersona_ops') THEN
        CREATE ROLE cpersona_ops NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
        COMMENT ON ROLE cpersona_ops IS 'Read-only operators of cpersona-service: SELECT on the views of schema ops only. GRANT cpersona_ops TO <login role>.';
    END IF;
END
$$;
REVOKE ALL ON SCHEMA ops FROM PUBLIC;
GRANT USAGE ON SCHEMA ops TO cpersona_ops;
GRANT SELECT ON ops.tenants, ops.agents, ops.embedding_backlog, ops.usage_daily,
                ops.largest_rows, ops.paused_scopes TO cpersona_ops;
"""

POLICY = (
    "CREATE POLICY ops_read ON {table} FOR SELECT "
    "USING ((SELECT pg_has_role(current_user, 'cpersona_ops', 'USAGE')));\n"
    "COMMENT ON POLICY ops_read ON {table} IS 'Lets the ops views read every tenant''s rows "
    "when the invoking role holds cpersona_ops (the views run as their owner, who may be "
    "subject to FORCE ROW LEVEL SECURITY). cpersona_ops has no privilege on the table itself.';"
)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def upgrade() -> None:
    op.execute(VIEWS)
    op.execute(ROLE)
    op.execute("\n".join(POLICY.format(table=table) for table in OPS_READ_TABLES))
    op.execute(
        "\n".join(
            f"COMMENT ON COLUMN {column} IS {_quoted(text)};"
            for column, text in COLUMN_COMMENTS.items()
        )
    )


def downgrade() -> None:
    op.execute("\n".join(f"COMMENT ON COLUMN {column} IS NULL;" for column in COLUMN_COMMENTS))
    op.execute(
        "\n".join(f"DROP POLICY IF EXISTS ops_read ON {table};" for table in OPS_READ_TABLES)
    )
    op.execute("DROP SCHEMA IF EXISTS ops CASCADE;")
    # The cpersona_ops role is cluster-wide and may serve other databases; it is kept.
