"""Storage side of recall calibration (queries in ``sql/calibration.sql``).

The per-tenant and per-agent calibration state lives in ``recall_calibration`` so
every replica answers the same; the embedding samples are drawn and their dot
products computed in Postgres (pgvector), so no vector maths library is needed
in the service process. Every query is confined to ``tenant_id``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class CalibrationRow:
    """One row of ``recall_calibration``: the tenant's (``agent_row`` false) or an agent's."""

    agent_row: bool
    vector_threshold: float | None
    fused_gate: float | None
    fused_gate_signal: str | None
    beta: float | None
    precision_label: str | None


async def calibration_state(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> list[CalibrationRow]:
    records = await conn.fetch(QUERIES["calibration_state"], tenant_id, agent)
    return [CalibrationRow(**dict(record)) for record in records]


@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    """A random embedding sample: rows drawn, the ids kept (the most common width), that
    width and the most common model among them."""

    drawn: int
    ids: list[int]
    dim: int | None
    model: str | None


async def calibration_sample(
    conn: Connection, tenant_id: TenantId, agent: str | None, size: int
) -> Sample:
    record = await conn.fetchrow(QUERIES["calibration_sample"], tenant_id, agent, size)
    if record is None:  # an aggregate query always answers one row
        raise RuntimeError("calibration_sample returned no row")
    return Sample(
        drawn=int(record["drawn"]),
        ids=list(record["ids"]),
        dim=record["dim"],
        model=record["model"],
    )


async def calibration_pair_sims(
    conn: Connection, tenant_id: TenantId, ids: Sequence[int]
) -> list[float]:
    """Similarities of every pair of ``ids``, ascending."""
    return list(await conn.fetchval(QUERIES["calibration_pair_sims"], tenant_id, list(ids)))


async def calibration_nearest_sims(
    conn: Connection, tenant_id: TenantId, ids: Sequence[int]
) -> list[float]:
    """Each row's best similarity with another of ``ids`` (in no particular order)."""
    return list(await conn.fetchval(QUERIES["calibration_nearest_sims"], tenant_id, list(ids)))


async def calibration_adjacent_sims(
    conn: Connection, tenant_id: TenantId, agent: str | None, dim: int, recent: int, window: float
) -> list[float]:
    value = await conn.fetchval(
        QUERIES["calibration_adjacent_sims"], tenant_id, agent, dim, recent, window
    )
    return list(value or [])


@dataclasses.dataclass(frozen=True, slots=True)
class PseudoQuery:
    """A stored memory used as a recall query: its text, time and stored vector."""

    id: int
    content: str
    timestamp_at: datetime
    embedding: list[float]


def _vector(value: Any) -> list[float]:
    """A pgvector value as a plain list (the codec yields ``pgvector.Vector``)."""
    return [float(x) for x in value.to_list()]


async def calibration_pseudo_queries(
    conn: Connection, tenant_id: TenantId, agent: str, dim: int, count: int
) -> list[PseudoQuery]:
    records = await conn.fetch(QUERIES["calibration_pseudo_queries"], tenant_id, agent, dim, count)
    return [
        PseudoQuery(r["id"], r["content"], r["timestamp_at"], _vector(r["embedding"]))
        for r in records
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class Calibration:
    """What one calibration stores. ``set_beta`` also writes ``beta``/``precision_label``
    (``beta`` None clears the override); a ``fused_gate`` of None keeps the stored gate."""

    vector_threshold: float
    fused_gate: float | None
    fused_gate_signal: str | None
    set_beta: bool
    beta: float | None
    precision_label: str | None
    embedding_model: str | None
    embedding_dim: int
    scoring_version: str
    report: dict[str, Any]


async def save_calibration(
    conn: Connection, tenant_id: TenantId, agent: str | None, c: Calibration
) -> bool:
    """Store ``c``; False when the agent no longer exists (nothing written)."""
    record = await conn.fetchrow(
        QUERIES["save_calibration"],
        *arguments(
            "save_calibration",
            {
                "tenant_id": tenant_id,
                "agent": agent,
                "vector_threshold": c.vector_threshold,
                "fused_gate": c.fused_gate,
                "fused_gate_signal": c.fused_gate_signal,
                "beta": c.beta,
                "set_beta": c.set_beta,
                "precision": c.precision_label,
                "embedding_model": c.embedding_model,
                "embedding_width": c.embedding_dim,
                "scoring_version": c.scoring_version,
                "report": c.report,
            },
        ),
    )
    return record is not None
