"""The passages' HNSW index holds half-precision copies of their vectors.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05

Recall walks the passages' HNSW index once per call, beside the memories' own walk
(docs/architecture.md, "Passages"), and the walk is most of what passages cost a recall.
Indexed as ``halfvec`` (16-bit floats; pgvector's ``halfvec_ip_ops``), an index entry is
half the bytes: the index is about 0.57 of the size (8.9 against 15.6 MiB for 8,000 passages
at 384 dimensions), more of it stays in Postgres's buffers, and the walk reads fewer
pages. The walk only orders the candidates: each passage's score is still computed from its
full-precision vector in the table, so the ranking the per-record collapse and the fusion
see is exact. Measured at statement level on 10,000 synthetic memories with 8,000 passages
(docs/benchmarks/passages.md, "Half-precision index"): the vector statement 0.2 to 0.7 ms
faster at p50, with 96 % of the vector channel's records the same (the rest differ by
the two approximate walks' near-ties: each index is its own graph).

Online on a populated database: the new indexes are built ``CONCURRENTLY`` (no write
lock) before the old ones are dropped the same way, outside a transaction, so recall
always has one to walk; an invalid leftover of an interrupted build is dropped and built
again. The 1,536-dimension index (an HTTP embedder's width) follows the same rule.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

DIMENSIONS = (384, 1536)

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = :name AND NOT i.indisvalid
"""


def _half_index(dim: int) -> str:
    return (
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS passages_halfvec_{dim} ON passages"
        f" USING hnsw ((embedding::halfvec({dim})) halfvec_ip_ops) WHERE embedding_dim = {dim}"
    )


def _comment(dim: int) -> str:
    return (
        f"COMMENT ON INDEX passages_halfvec_{dim} IS 'Recall''s walk of the passages nearest"
        " a query (half-precision copies; scores are computed from the full vectors).'"
    )


def upgrade() -> None:
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        for dim in DIMENSIONS:
            name = f"passages_halfvec_{dim}"
            if bind.execute(text(INVALID_INDEX), {"name": name}).first() is not None:
                bind.execute(text(f"DROP INDEX CONCURRENTLY {name}"))
            bind.execute(text(_half_index(dim)))
            bind.execute(text(_comment(dim)))
            bind.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS passages_embedding_{dim}"))


def downgrade() -> None:
    for dim in DIMENSIONS:
        op.execute(
            f"CREATE INDEX IF NOT EXISTS passages_embedding_{dim} ON passages"
            f" USING hnsw ((embedding::vector({dim})) vector_ip_ops) WHERE embedding_dim = {dim}"
        )
        op.execute(f"DROP INDEX IF EXISTS passages_halfvec_{dim}")
