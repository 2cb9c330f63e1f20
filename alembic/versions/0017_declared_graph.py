"""The declared graph: entities with aliases, mentions and relations (docs/tools.md,
"declare_associations", "traverse").

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04

Four new tables, each per tenant (``tenant_id`` in every key and foreign key) under
row-level security like the others. A record end (``mem:N`` / ``ep:N``) is stored as a
kind and an id, and a stored generated column per kind carries a foreign key to
``memories`` or ``episodes`` ``ON DELETE CASCADE``: deleting a record by any path
(delete_memory, delete_episode, delete_agent_data, health repairs, merge) removes its
mentions and every relation naming it as subject, object or anchor, in the deleting
transaction, and a declaration racing the delete of its record fails its foreign-key
check instead of leaving a dangling row.

Online on a populated database: the tables are new and empty, so creating them and
their indexes takes no time; the foreign keys to ``memories`` and ``episodes`` take a
brief lock on those tables to register, with nothing to validate.
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def _record_columns(end: str) -> str:
    """The generated per-kind columns of one record-or-entity end of a relation."""
    return f"""
    {end}_entity bigint GENERATED ALWAYS AS
        (CASE WHEN {end}_kind = 'entity' THEN {end}_id END) STORED,
    {end}_memory bigint GENERATED ALWAYS AS
        (CASE WHEN {end}_kind = 'mem' THEN {end}_id END) STORED,
    {end}_episode bigint GENERATED ALWAYS AS
        (CASE WHEN {end}_kind = 'ep' THEN {end}_id END) STORED,"""


def _record_keys(end: str) -> str:
    return f"""
    FOREIGN KEY (tenant_id, {end}_memory) REFERENCES memories (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, {end}_episode) REFERENCES episodes (tenant_id, id) ON DELETE CASCADE,"""


UPGRADE = rf"""
CREATE TABLE entities (
    tenant_id   uuid        NOT NULL,
    id          bigserial   NOT NULL,
    agent_id    bigint      NOT NULL,
    project_id  text        NOT NULL DEFAULT '',
    channel     text        NOT NULL DEFAULT '',
    name        text        NOT NULL,
    normalized  text        NOT NULL,
    declared_by text        NOT NULL DEFAULT 'agent' CHECK (declared_by IN ('agent', 'operator')),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, agent_id, project_id, channel, normalized),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE entities IS 'Declared entities of an agent (name as written, normalized form), per project and channel scope; nothing is inferred.';
CREATE INDEX entities_normalized ON entities (tenant_id, agent_id, normalized);

CREATE TABLE entity_aliases (
    tenant_id  uuid   NOT NULL,
    entity_id  bigint NOT NULL,
    alias      text   NOT NULL,
    normalized text   NOT NULL,
    PRIMARY KEY (tenant_id, entity_id, normalized),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES entities (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE entity_aliases IS 'Other names of an entity (as written and normalized); one namespace with entity names.';
CREATE INDEX entity_aliases_normalized ON entity_aliases (tenant_id, normalized);

CREATE TABLE entity_mentions (
    tenant_id   uuid        NOT NULL,
    entity_id   bigint      NOT NULL,
    ref_kind    text        NOT NULL CHECK (ref_kind IN ('mem', 'ep')),
    ref_id      bigint      NOT NULL,
    memory_id   bigint GENERATED ALWAYS AS (CASE WHEN ref_kind = 'mem' THEN ref_id END) STORED,
    episode_id  bigint GENERATED ALWAYS AS (CASE WHEN ref_kind = 'ep' THEN ref_id END) STORED,
    declared_by text        NOT NULL DEFAULT 'agent' CHECK (declared_by IN ('agent', 'operator')),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, entity_id, ref_kind, ref_id),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES entities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, episode_id) REFERENCES episodes (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE entity_mentions IS 'Entity mentioned by a record (mem:N / ep:N); deleted with the record or the entity.';
CREATE INDEX entity_mentions_memory ON entity_mentions (tenant_id, memory_id)
    WHERE memory_id IS NOT NULL;
CREATE INDEX entity_mentions_episode ON entity_mentions (tenant_id, episode_id)
    WHERE episode_id IS NOT NULL;

CREATE TABLE relations (
    tenant_id    uuid        NOT NULL,
    id           bigserial   NOT NULL,
    agent_id     bigint      NOT NULL,
    project_id   text        NOT NULL DEFAULT '',
    channel      text        NOT NULL DEFAULT '',
    subject_kind text        NOT NULL CHECK (subject_kind IN ('entity', 'mem', 'ep')),
    subject_id   bigint      NOT NULL,
    predicate    text        NOT NULL,
    object_kind  text        NOT NULL CHECK (object_kind IN ('entity', 'mem', 'ep')),
    object_id    bigint      NOT NULL,
    anchor_kind  text        NOT NULL DEFAULT '' CHECK (anchor_kind IN ('', 'mem', 'ep')),
    anchor_id    bigint      NOT NULL DEFAULT 0,
    declared_by  text        NOT NULL DEFAULT 'agent' CHECK (declared_by IN ('agent', 'operator')),
    declared_at  timestamptz NOT NULL DEFAULT clock_timestamp(),{_record_columns("subject")}{_record_columns("object")}
    anchor_memory bigint GENERATED ALWAYS AS
        (CASE WHEN anchor_kind = 'mem' THEN anchor_id END) STORED,
    anchor_episode bigint GENERATED ALWAYS AS
        (CASE WHEN anchor_kind = 'ep' THEN anchor_id END) STORED,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, agent_id, project_id, channel, subject_kind, subject_id, predicate,
            object_kind, object_id, anchor_kind, anchor_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, subject_entity) REFERENCES entities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, object_entity) REFERENCES entities (tenant_id, id) ON DELETE CASCADE,{_record_keys("subject")}{_record_keys("object")}{_record_keys("anchor")[:-1]}
);
COMMENT ON TABLE relations IS 'Declared subject-predicate-object triples (each end an entity or a record; predicate normalized); deleted with any record they name as subject, object or anchor.';
CREATE INDEX relations_subject_entity ON relations (tenant_id, subject_entity, declared_at)
    WHERE subject_entity IS NOT NULL;
CREATE INDEX relations_object_entity ON relations (tenant_id, object_entity, declared_at)
    WHERE object_entity IS NOT NULL;
CREATE INDEX relations_subject_memory ON relations (tenant_id, subject_memory)
    WHERE subject_memory IS NOT NULL;
CREATE INDEX relations_subject_episode ON relations (tenant_id, subject_episode)
    WHERE subject_episode IS NOT NULL;
CREATE INDEX relations_object_memory ON relations (tenant_id, object_memory)
    WHERE object_memory IS NOT NULL;
CREATE INDEX relations_object_episode ON relations (tenant_id, object_episode)
    WHERE object_episode IS NOT NULL;
CREATE INDEX relations_anchor_memory ON relations (tenant_id, anchor_memory)
    WHERE anchor_memory IS NOT NULL;
CREATE INDEX relations_anchor_episode ON relations (tenant_id, anchor_episode)
    WHERE anchor_episode IS NOT NULL;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['entities', 'entity_aliases', 'entity_mentions', 'relations'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_current_tenant()) '
            'WITH CHECK (tenant_id = app_current_tenant())', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO cpersona_app', t);
    END LOOP;
END
$$;
GRANT USAGE ON SEQUENCE entities_id_seq, relations_id_seq TO cpersona_app;
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS relations;
DROP TABLE IF EXISTS entity_mentions;
DROP TABLE IF EXISTS entity_aliases;
DROP TABLE IF EXISTS entities;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
