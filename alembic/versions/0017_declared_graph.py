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

COMMENT ON COLUMN entities.agent_id IS 'The agent (agents.id) that declared the entity.';
COMMENT ON COLUMN entities.project_id IS 'Project scope of the declaration ('''' = the shared pool), as for memories.';
COMMENT ON COLUMN entities.channel IS 'Channel scope of the declaration ('''' = none), as for memories.';
COMMENT ON COLUMN entities.normalized IS 'The name normalized (NFKC, case-folded, inner whitespace collapsed): what lookups and the alias clash rule compare.';
COMMENT ON COLUMN entities.declared_by IS 'Who declared it: an agent through a tool, or an operator.';
COMMENT ON COLUMN entity_aliases.entity_id IS 'The entity (entities.id) this is another name of.';
COMMENT ON COLUMN entity_aliases.alias IS 'The other name as written.';
COMMENT ON COLUMN entity_aliases.normalized IS 'The alias normalized like entities.normalized; unique per entity.';
COMMENT ON COLUMN entity_mentions.entity_id IS 'The entity (entities.id) the record mentions.';
COMMENT ON COLUMN entity_mentions.ref_kind IS 'The record''s kind: mem (a memory) or ep (an episode).';
COMMENT ON COLUMN entity_mentions.ref_id IS 'The record''s id (memories.id or episodes.id, by ref_kind).';
COMMENT ON COLUMN entity_mentions.memory_id IS 'ref_id when ref_kind is mem (generated): the key that deletes the mention with its memory.';
COMMENT ON COLUMN entity_mentions.episode_id IS 'ref_id when ref_kind is ep (generated): the key that deletes the mention with its episode.';
COMMENT ON COLUMN entity_mentions.declared_by IS 'Who declared it: an agent through a tool, or an operator.';
COMMENT ON COLUMN relations.agent_id IS 'The agent (agents.id) that declared the relation.';
COMMENT ON COLUMN relations.project_id IS 'Project scope of the declaration ('''' = the shared pool).';
COMMENT ON COLUMN relations.channel IS 'Channel scope of the declaration ('''' = none).';
COMMENT ON COLUMN relations.subject_kind IS 'The subject''s kind: entity, mem or ep.';
COMMENT ON COLUMN relations.subject_id IS 'The subject''s id (entities.id, memories.id or episodes.id, by subject_kind).';
COMMENT ON COLUMN relations.predicate IS 'The relation word, normalized (lower case, spaces as underscores).';
COMMENT ON COLUMN relations.object_kind IS 'The object''s kind: entity, mem or ep.';
COMMENT ON COLUMN relations.object_id IS 'The object''s id (by object_kind).';
COMMENT ON COLUMN relations.anchor_kind IS 'The kind of the record the relation was declared from ('''' = none, mem, ep).';
COMMENT ON COLUMN relations.anchor_id IS 'The anchor record''s id (0 = none).';
COMMENT ON COLUMN relations.declared_by IS 'Who declared it: an agent through a tool, or an operator.';
COMMENT ON COLUMN relations.declared_at IS 'When it was declared (the walk''s recency order).';
COMMENT ON COLUMN relations.subject_entity IS 'subject_id when subject_kind is entity (generated): the walk''s key and the cascade from the entity.';
COMMENT ON COLUMN relations.subject_memory IS 'subject_id when subject_kind is mem (generated): deletes the relation with its memory.';
COMMENT ON COLUMN relations.subject_episode IS 'subject_id when subject_kind is ep (generated): deletes the relation with its episode.';
COMMENT ON COLUMN relations.object_entity IS 'object_id when object_kind is entity (generated): the walk''s key and the cascade from the entity.';
COMMENT ON COLUMN relations.object_memory IS 'object_id when object_kind is mem (generated): deletes the relation with its memory.';
COMMENT ON COLUMN relations.object_episode IS 'object_id when object_kind is ep (generated): deletes the relation with its episode.';
COMMENT ON COLUMN relations.anchor_memory IS 'anchor_id when anchor_kind is mem (generated): deletes the relation with its anchor memory.';
COMMENT ON COLUMN relations.anchor_episode IS 'anchor_id when anchor_kind is ep (generated): deletes the relation with its anchor episode.';

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
