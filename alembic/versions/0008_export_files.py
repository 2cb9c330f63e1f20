"""The export area's catalogue, and a queue view without a terminal state.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

Every file of a tenant's export area (what ``export_memories`` wrote or
``POST /v1/files`` uploaded) gets a row in ``export_files``: the agents whose
records it holds, the key that wrote it, its size and when it expires. Grants are
checked against that row on every read, download and overwrite, so a key can never
reach another key's export of an agent it may not read; deleting an agent deletes
the files holding it; a sweep deletes expired files; a per-tenant quota sums the
sizes. A table, not a sidecar file next to each export: the check, the overwrite,
the quota and the deletion then happen in one transaction with row-level security,
every replica sees the same catalogue, and a crash can never leave a file without
its metadata (files are stored under random names and reachable only through a row).

The embedding queue no longer gives up on a row (jobs are retried with capped
backoff for as long as the provider is down), so ``ops.embedding_backlog`` counts
every job as pending and reports the ones still retrying instead of "failed" ones.
"""

from __future__ import annotations

from typing import NamedTuple

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

EXPORT_FILES = r"""
CREATE TABLE export_files (
    tenant_id      uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name           text        NOT NULL,
    storage        text        NOT NULL,
    agents         text[]      NOT NULL,
    writer_key_id  text        NOT NULL,
    size_bytes     bigint      NOT NULL CHECK (size_bytes >= 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name),
    CONSTRAINT export_files_storage_key UNIQUE (tenant_id, storage)
);
CREATE INDEX export_files_expiry ON export_files (expires_at);
COMMENT ON TABLE export_files IS 'Files in each tenant''s export area (exports and uploads): which agents they hold, who wrote them, size and expiry. Reading a file needs read on every agent it holds; overwriting it read-write.';
COMMENT ON COLUMN export_files.name IS 'The name tools and URLs use (output_path / input_path / POST /v1/files/<name>).';
COMMENT ON COLUMN export_files.storage IS 'The file''s name on disk inside <export dir>/<tenant uuid>/ (random, one per version).';
COMMENT ON COLUMN export_files.agents IS 'agent_id of every record the file holds (an agent export: that agent).';
COMMENT ON COLUMN export_files.writer_key_id IS 'KEY_ID of the API key that wrote the file.';
COMMENT ON COLUMN export_files.size_bytes IS 'File size; the tenant''s files together stay under CPERSONA_EXPORT_QUOTA_BYTES.';
COMMENT ON COLUMN export_files.created_at IS 'When this version of the file was written.';
COMMENT ON COLUMN export_files.expires_at IS 'created_at + CPERSONA_EXPORT_RETENTION_HOURS: the file is deleted after it.';
COMMENT ON INDEX export_files_expiry IS 'The retention sweep''s lookup of expired files.';
ALTER TABLE export_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE export_files FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON export_files
    USING (tenant_id = app_current_tenant()) WITH CHECK (tenant_id = app_current_tenant());
CREATE POLICY ops_read ON export_files FOR SELECT
    USING ((SELECT pg_has_role(current_user, 'cpersona_ops', 'USAGE')));
COMMENT ON POLICY ops_read ON export_files IS 'Lets the ops views read every tenant''s rows when the invoking role holds cpersona_ops (the views run as their owner, who may be subject to FORCE ROW LEVEL SECURITY). cpersona_ops has no privilege on the table itself.';
GRANT SELECT, INSERT, UPDATE, DELETE ON export_files TO cpersona_app;

CREATE VIEW ops.export_files WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug, f.name, f.agents, f.writer_key_id, f.size_bytes,
       f.created_at, f.expires_at
FROM public.export_files f
JOIN public.tenants t ON t.id = f.tenant_id;
COMMENT ON VIEW ops.export_files IS 'Files in the tenants'' export areas: who wrote them, which agents they hold, size and expiry (never content).';
COMMENT ON COLUMN ops.export_files.agents IS 'Agents whose records the file holds.';
COMMENT ON COLUMN ops.export_files.writer_key_id IS 'KEY_ID of the key that wrote it.';
COMMENT ON COLUMN ops.export_files.size_bytes IS 'File size in bytes (counted against CPERSONA_EXPORT_QUOTA_BYTES).';
GRANT SELECT ON ops.export_files TO cpersona_ops;
"""

BACKLOG_VIEW = r"""
DROP VIEW ops.embedding_backlog;
CREATE VIEW ops.embedding_backlog WITH (security_invoker = false) AS
SELECT t.slug AS tenant_slug,
       count(j.id) FILTER (WHERE {pending}) AS pending,
       count(j.id) FILTER (WHERE {second}) AS {second_name},
       count(j.id) FILTER (WHERE j.last_error IS NOT NULL) AS with_error,
       min(j.created_at) FILTER (WHERE {pending}) AS oldest_pending_at,
       (SELECT count(*) FROM public.memories m
        WHERE m.tenant_id = t.id AND m.embedding IS NULL) AS unembedded_memories,
       (SELECT count(*) FROM public.episodes e
        WHERE e.tenant_id = t.id AND e.embedding IS NULL) AS unembedded_episodes
FROM public.tenants t
LEFT JOIN public.embedding_jobs j ON j.tenant_id = t.id
GROUP BY t.id, t.slug;
GRANT SELECT ON ops.embedding_backlog TO cpersona_ops;
"""
KEPT_COMMENTS = {
    "ops.embedding_backlog.with_error": "Jobs whose last attempt failed.",
    "ops.embedding_backlog.unembedded_memories": "Memories without a vector (recall finds them lexically only).",
    "ops.embedding_backlog.unembedded_episodes": "Episodes without a vector.",
}  # fmt: skip


class Backlog(NamedTuple):
    """One version of the view: what counts as pending, the second count and its name,
    and the comments that differ between the versions."""

    pending: str
    second: str
    second_name: str
    comments: dict[str, str]


NEW_BACKLOG = Backlog(
    pending="true",
    second="j.attempts > 0",
    second_name="retrying",
    comments={
        "VIEW ops.embedding_backlog": "The embedding queue per tenant: jobs waiting (none is ever given up), jobs retrying after a failure, rows still without a vector.",
        "ops.embedding_backlog.pending": "Every queued job: the worker runs each until its row is embedded.",
        "ops.embedding_backlog.retrying": "Jobs whose last attempt failed and that wait for their (capped, exponential) retry; embedding_jobs.last_error says why.",
        "ops.embedding_backlog.oldest_pending_at": "Enqueue time of the oldest job: a growing age means no worker drains the queue or the provider is down.",
        "embedding_jobs.attempts": "Failed attempts so far; sets the retry backoff (CPERSONA_TASK_RETRY_DELAY doubling up to CPERSONA_TASK_MAX_RETRIES times). Jobs are never given up.",
    },
)  # fmt: skip
OLD_BACKLOG = Backlog(
    pending="j.attempts < 3",
    second="j.attempts >= 3",
    second_name="failed",
    comments={
        "VIEW ops.embedding_backlog": "The embedding queue per tenant: jobs waiting, jobs given up on, rows still without a vector.",
        "ops.embedding_backlog.pending": "Jobs below the retry limit (3, the CPERSONA_TASK_MAX_RETRIES default): the worker will still run them.",
        "ops.embedding_backlog.failed": "Jobs at the retry limit: kept for inspection (see embedding_jobs.last_error), not retried; check_health(fix) re-arms them.",
        "ops.embedding_backlog.oldest_pending_at": "Enqueue time of the oldest pending job: a growing age means no worker drains the queue.",
        "embedding_jobs.attempts": "Failed attempts so far; jobs at the retry limit stay for inspection and are not retried.",
    },
)  # fmt: skip


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _backlog(version: Backlog) -> str:
    """The ops.embedding_backlog view of one version, with its comments."""
    comments = {**KEPT_COMMENTS, **version.comments}
    lines = [
        f"COMMENT ON {target if target.startswith('VIEW ') else 'COLUMN ' + target} "
        f"IS {_quoted(text)};"
        for target, text in comments.items()
    ]
    sql = BACKLOG_VIEW.format(
        pending=version.pending, second=version.second, second_name=version.second_name
    )
    return sql + "\n".join(lines)


def upgrade() -> None:
    op.execute(EXPORT_FILES)
    op.execute(_backlog(NEW_BACKLOG))


def downgrade() -> None:
    op.execute(_backlog(OLD_BACKLOG))
    op.execute("DROP VIEW IF EXISTS ops.export_files;")
    op.execute("DROP TABLE IF EXISTS export_files;")
