"""calibrate_threshold, set_recall_precision, get_recall_precision
(docs/tools.md, "calibrate_threshold"; acceptance items 6, 76a, 86, 87) over real HTTP with
the official MCP client, and real calibrations of memories embedded by the bundled local
model, stored per tenant and agent in ``recall_calibration``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.config import Settings
from service.db.pool import Database
from service.embeddings.base import EmbeddingProvider
from service.embeddings.local import DIMENSION, MODEL_NAME
from service.memory import calibration, tenants
from service.memory.health import deep
from service.memory.library import Library
from service.memory.memories import edits, store
from service.memory.recall.gate import heuristic_min_score
from service.models import TenantId
from tests.support import Agent, Served, serve, text

TOPICS: list[list[str]] = [
    [
        "Planted six tomato seedlings along the south fence of the garden.",
        "The tomato plants need watering every morning while the weather stays hot.",
        "Added compost and mulch around the tomatoes to keep the soil moist.",
        "Pinched the side shoots off the tomato vines so the fruit ripens sooner.",
        "Aphids showed up on the garden beans; sprayed them with soapy water.",
        "Harvested the first ripe tomatoes and basil from the vegetable garden.",
    ],
    [
        "Set up the telescope on the balcony to look at Jupiter tonight.",
        "Saw four of Jupiter's moons lined up next to the planet through the eyepiece.",
        "The Orion nebula looked like a faint grey cloud in the telescope.",
        "Light pollution from the city makes faint galaxies hard to observe.",
        "Planning to photograph the meteor shower from a dark sky site next month.",
        "Saturn's rings were clearly visible at high magnification after midnight.",
    ],
    [
        "Made fresh pasta dough with eggs and flour for dinner.",
        "The carbonara sauce needs guanciale, pecorino cheese and black pepper.",
        "Boiled the spaghetti in well salted water for nine minutes.",
        "Tried a new pesto recipe with pine nuts, garlic and olive oil.",
        "The lasagna baked for forty minutes until the cheese turned golden.",
        "Leftover risotto can be fried into crispy rice balls the next day.",
    ],
    [
        "The car needs an oil change every ten thousand kilometres.",
        "Replaced the worn brake pads on the front wheels of the car.",
        "The check engine light came on; the mechanic found a faulty oxygen sensor.",
        "Rotated the tyres and checked their pressure before the long drive.",
        "The car battery died in the cold weather and needed a jump start.",
        "Booked the annual car inspection at the garage for next Tuesday.",
    ],
    [
        "Refactored the Python parser to use dataclasses instead of dictionaries.",
        "Wrote pytest fixtures for the database tests of the Python service.",
        "Fixed an off-by-one bug in the pagination code of the API.",
        "Added type hints and ran mypy in strict mode over the whole codebase.",
        "The asyncio event loop was blocked by a synchronous file read.",
        "Profiled the slow endpoint and cached the expensive query results.",
    ],
    [
        "Hiked to the mountain lake early in the morning with a heavy backpack.",
        "The trail climbed steeply through pine forest before reaching the ridge.",
        "Packed extra water, a rain jacket and trail snacks for the hike.",
        "Saw a herd of chamois grazing on the alpine meadow near the summit.",
        "Camped beside the lake and watched the sunset over the peaks.",
        "Blisters on both heels after twenty kilometres of hiking boots.",
    ],
]
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _dated(topics: Sequence[Sequence[str]], first_day: int) -> list[tuple[str, str]]:
    """One session per topic on its own day, its memories five minutes apart."""
    out = []
    for day, topic in enumerate(topics, start=first_day):
        for n, sentence in enumerate(topic):
            moment = START + timedelta(days=day, minutes=5 * n)
            out.append((sentence, moment.isoformat()))
    return out


async def _seed(lib: Library, tenant: TenantId, agent: str, rows: list[tuple[str, str]]) -> None:
    for content, timestamp in rows:
        message = {"content": content, "timestamp": timestamp}
        stored = await store.store(lib, tenant, store.StoreRequest(agent, message))
        assert isinstance(stored, store.Stored), stored
        assert stored.embedded is True, stored


async def _tenant(lib: Library, slug: str) -> tuple[TenantId, str]:
    row = await tenants.create_tenant(lib.db, slug)
    return TenantId(row.id), await tenants.create_key(lib.db, slug, label=f"{slug}-key")


ROWS = """
SELECT a.name AS agent, c.vector_threshold, c.fused_gate, c.fused_gate_signal, c.beta,
       c.precision_label, c.embedding_model, c.embedding_dim, c.scoring_version, c.details
FROM recall_calibration c
JOIN tenants t ON t.id = c.tenant_id
LEFT JOIN agents a ON a.tenant_id = c.tenant_id AND a.id = c.agent_id
WHERE t.slug = $1
ORDER BY a.name NULLS FIRST
"""


async def _stored(db: Database, slug: str) -> dict[str | None, dict[str, Any]]:
    """The calibration rows of a tenant, by agent name (None: the tenant-wide row)."""
    async with db.admin_tx() as conn:
        records = await conn.fetch(ROWS, slug)
    return {r["agent"]: dict(r) for r in records}


@pytest.fixture
def rsf_settings(local_settings: Settings) -> Settings:
    """Local embeddings and rsf fusion: every row then carries the gate's signal."""
    return dataclasses.replace(local_settings, recall_mode="rsf")


@pytest.fixture
def rsf_lib(db: Database, rsf_settings: Settings, local_embedder: EmbeddingProvider) -> Library:
    return Library(db, rsf_settings, local_embedder)


@pytest.fixture
async def rsf_served(rsf_settings: Settings, database_url: str) -> AsyncIterator[Served]:
    async with serve(rsf_settings, database_url) as running:
        yield running


# --- acceptance behaviours without embeddings --------------------------------------------


async def test_method_outside_the_three_is_an_input_validation_error(client: Agent) -> None:
    result = await client.raw("calibrate_threshold", {"agent_id": "a", "method": "z-score"})
    assert result.is_error
    assert text(result) == (
        "Input validation error: 'z-score' is not one of ['separation', 'percentile', 'zscore']"
    )


async def test_fewer_than_ten_embeddings_is_a_tool_failure(client: Agent) -> None:
    for n in range(3):  # embeddings are off: stored, never embedded
        await client.call("store", agent_id="a", message={"content": f"memory number {n}"})
    for agent in ("a", "", "nobody"):
        answer = await client.call("calibrate_threshold", agent_id=agent)
        assert answer == {"ok": False, "error": "Need at least 10 embeddings, found 0"}


async def test_precision_names_and_the_fresh_agent_default(client: Agent) -> None:
    assert await client.call("set_recall_precision", agent_id="a", precision="bogus") == {
        "ok": False,
        "error": "Unknown precision 'bogus'; expected strict / balanced / lenient",
    }
    assert await client.call("get_recall_precision", agent_id="fresh") == {
        "ok": True,
        "agent_id": "fresh",
        "precision": "balanced",
        "beta": 1.0,
        "overridden": False,
        "global_precision": "balanced",
        "global_beta": 1.0,
    }
    required = {"ok": False, "error": "agent_id is required"}
    assert await client.call("get_recall_precision", agent_id="") == required
    assert await client.call("set_recall_precision", agent_id="", precision="strict") == required
    failed = await client.call("set_recall_precision", agent_id="a", precision="STRICT")
    assert failed == {
        "ok": False,
        "agent_id": "a",
        "precision": "strict",
        "beta": 2.0,
        "cleared": False,
        "error": "Need at least 10 embeddings, found 0",
    }
    assert (await client.call("get_recall_precision", agent_id="a"))["overridden"] is False


async def test_bad_input_is_refused_under_a_pause_and_good_input_is_skipped(
    client: Agent,
) -> None:
    await client.call("pause_persistence", ttl_seconds=600)
    refused = await client.call("calibrate_threshold", agent_id="a", percentile=500)
    assert refused == {
        "ok": False,
        "error": "percentile must be in (0, 1] (or a percent 1-100), got 500.0",
    }
    skipped = await client.call("calibrate_threshold", agent_id="a", percentile=90)
    assert skipped["persisted"] is False
    assert skipped["dry_run"] is True
    assert "calibrate_threshold" in skipped["reason"]
    expected = {
        "ok": True,
        "sidecar_persisted": False,
        "scope": "per_agent",
        "agent_id": "a",
        "sampled_embeddings": 0,
        "num_pairs": 0,
        "method": "separation",
        "z_factor": 1.0,
        "percentile": 0.9,
        "embedding_dim": None,
        "embedding_model": None,
        "distribution": None,
        "null_admit_rate": None,
        "old_threshold": 0.3,
        "new_threshold": None,
    }
    assert {k: skipped[k] for k in expected} == expected
    assert (await client.call("set_recall_precision", agent_id="a", precision="x"))["ok"] is False
    paused = await client.call("set_recall_precision", agent_id="a", precision="strict")
    assert paused["persisted"] is False
    assert {k: paused[k] for k in ("ok", "precision", "beta", "cleared", "fused_gate")} == {
        "ok": True,
        "precision": "strict",
        "beta": 2.0,
        "cleared": False,
        "fused_gate": None,
    }


# --- real calibrations with the local model -----------------------------------------------


async def test_calibration_of_embedded_memories_is_stored_and_applied(
    rsf_lib: Library, rsf_served: Served
) -> None:
    tenant, key = await _tenant(rsf_lib, "acme")
    client = Agent(rsf_served, key)
    rows = _dated(TOPICS, first_day=0)
    await _seed(rsf_lib, tenant, "alice", rows[:5])
    too_few = await client.call("calibrate_threshold", agent_id="alice")
    assert too_few == {"ok": False, "error": "Need at least 10 embeddings, found 5"}
    await _seed(rsf_lib, tenant, "alice", rows[5:])
    await _seed(rsf_lib, tenant, "bob", _dated(TOPICS[:2], first_day=40))

    report = await client.call("calibrate_threshold", agent_id="alice")
    _check_agent_report(report)
    stored = (await _stored(rsf_lib.db, "acme"))["alice"]
    gate = report["fused_gate"]
    assert stored["vector_threshold"] == report["new_threshold"]
    assert (stored["fused_gate"], stored["fused_gate_signal"]) == (gate["threshold"], "rsf")
    assert (stored["embedding_dim"], stored["embedding_model"]) == (DIMENSION, MODEL_NAME)
    assert stored["scoring_version"] == calibration.SCORING_VERSION == deep.SCORING_VERSION
    assert stored["details"]["new_threshold"] == report["new_threshold"]
    assert stored["beta"] is None

    found = await client.call("recall", agent_id="alice", query="keeping tomato plants healthy")
    scores = [m["match_reason"]["score"] for m in found["messages"] if "match_reason" in m]
    assert scores, found
    assert min(scores) >= gate["threshold"]
    assert min(scores) < heuristic_min_score(36)  # the calibrated gate replaced it

    again = await client.call(
        "calibrate_threshold", agent_id="alice", method="percentile", percentile=90
    )
    assert again["old_threshold"] == report["new_threshold"]
    assert (again["method"], again["percentile"], "proxy_source" in again) == (
        "percentile",
        0.9,
        False,
    )
    tenant_wide = await client.call("calibrate_threshold", agent_id="")
    assert (tenant_wide["scope"], tenant_wide["sampled_embeddings"]) == ("global", 48)
    assert "fused_gate" not in tenant_wide
    assert tenant_wide["old_threshold"] == 0.3
    assert (await _stored(rsf_lib.db, "acme"))[None]["vector_threshold"] == (
        tenant_wide["new_threshold"]
    )


def _check_agent_report(report: dict[str, Any]) -> None:
    assert report["ok"] is True
    assert report["sidecar_persisted"] is True
    assert (report["scope"], report["agent_id"], report["method"]) == (
        "per_agent",
        "alice",
        "separation",
    )
    assert (report["sampled_embeddings"], report["num_pairs"]) == (36, 630)
    assert (report["embedding_dim"], report["embedding_model"]) == (DIMENSION, MODEL_NAME)
    assert (report["z_factor"], report["percentile"], report["old_threshold"]) == (1.0, 0.95, 0.3)
    assert report["proxy_source"] == "temporal"
    assert set(report["distribution"]) == {"mean", "std", "median", "p95"}
    assert 0.05 <= report["new_threshold"] < 1.0
    assert report["pos_mean"] > report["distribution"]["mean"]  # same session: related
    gate = report["fused_gate"]
    assert (gate["signal"], gate["beta"], gate["queries_run"]) == ("rsf", 1.0, 36)
    assert gate["n_pos"] >= 5
    assert gate["n_null"] >= 10
    assert len(gate["threshold_draws"]) == 5
    assert 0.05 <= gate["threshold"] <= 1.0


async def test_precision_is_set_read_back_cleared_and_rolled_back(
    rsf_lib: Library, rsf_served: Served
) -> None:
    tenant, key = await _tenant(rsf_lib, "acme")
    client = Agent(rsf_served, key)
    await _seed(rsf_lib, tenant, "alice", _dated(TOPICS, first_day=0))
    strict = await client.call("set_recall_precision", agent_id="alice", precision="Strict")
    assert {k: strict[k] for k in ("ok", "agent_id", "precision", "beta", "cleared")} == {
        "ok": True,
        "agent_id": "alice",
        "precision": "strict",
        "beta": 2.0,
        "cleared": False,
    }
    assert strict["fused_gate"]["beta"] == 2.0
    assert strict["calibrate"] == {
        "ok": True,
        "scope": "per_agent",
        "new_threshold": strict["calibrate"]["new_threshold"],
    }
    read = await client.call("get_recall_precision", agent_id="alice")
    assert (read["precision"], read["beta"], read["overridden"]) == ("strict", 2.0, True)
    stored = (await _stored(rsf_lib.db, "acme"))["alice"]
    assert (stored["beta"], stored["precision_label"]) == (2.0, "strict")
    assert stored["fused_gate"] == strict["fused_gate"]["threshold"]

    custom = await client.call(
        "set_recall_precision", agent_id="alice", precision="lenient", beta=0.7
    )
    assert (custom["precision"], custom["beta"]) == ("custom", 0.7)
    named = await client.call("set_recall_precision", agent_id="alice", beta=1.0)
    assert (named["precision"], named["beta"]) == ("balanced", 1.0)
    cleared = await client.call("set_recall_precision", agent_id="alice")
    assert (cleared["precision"], cleared["beta"], cleared["cleared"]) == ("default", 1.0, True)
    read = await client.call("get_recall_precision", agent_id="alice")
    assert (read["precision"], read["overridden"]) == ("balanced", False)
    assert (await _stored(rsf_lib.db, "acme"))["alice"]["beta"] is None

    await _seed(rsf_lib, tenant, "small", _dated(TOPICS[:2], first_day=20))
    assert (await client.call("set_recall_precision", agent_id="small", precision="strict"))["ok"]
    listed = await client.call("list_memories", agent_id="small", limit=3)
    for row in listed["memories"]:  # 12 -> 9 embedded memories: calibration must fail
        deleted = await edits.delete_memory(rsf_lib, tenant, row["id"], "small")
        assert deleted == edits.Deleted(row["id"])
    failed = await client.call("set_recall_precision", agent_id="small", precision="lenient")
    assert failed == {
        "ok": False,
        "agent_id": "small",
        "precision": "lenient",
        "beta": 0.5,
        "cleared": False,
        "error": "Need at least 10 embeddings, found 9",
    }
    kept = await client.call("get_recall_precision", agent_id="small")
    assert (kept["precision"], kept["overridden"]) == ("strict", True)

    deleted = await client.call("delete_agent_data", agent_id="small")
    assert deleted["deleted_memories"] == 9
    assert "small" not in await _stored(rsf_lib.db, "acme")
    fresh = await client.call("get_recall_precision", agent_id="small")
    assert (fresh["precision"], fresh["overridden"]) == ("balanced", False)


async def test_a_tenant_never_reads_or_changes_another_tenants_calibration(
    rsf_lib: Library, rsf_served: Served
) -> None:
    tenant_a, key_a = await _tenant(rsf_lib, "tenant-a")
    tenant_b, key_b = await _tenant(rsf_lib, "tenant-b")
    a, b = Agent(rsf_served, key_a), Agent(rsf_served, key_b)
    await _seed(rsf_lib, tenant_a, "shared", _dated(TOPICS, first_day=0))
    assert (await a.call("set_recall_precision", agent_id="shared", precision="strict"))["ok"]
    assert (await a.call("calibrate_threshold", agent_id=""))["ok"]
    before = await _stored(rsf_lib.db, "tenant-a")

    empty = {"ok": False, "error": "Need at least 10 embeddings, found 0"}
    assert await b.call("calibrate_threshold", agent_id="shared") == empty
    assert await b.call("calibrate_threshold", agent_id="") == empty
    assert (await b.call("set_recall_precision", agent_id="shared", beta=3.0))["ok"] is False
    assert (await b.call("get_recall_precision", agent_id="shared"))["overridden"] is False

    await _seed(rsf_lib, tenant_b, "shared", _dated(TOPICS[3:5], first_day=60))
    own = await b.call("calibrate_threshold", agent_id="shared")
    assert (own["sampled_embeddings"], own["old_threshold"]) == (12, 0.3)
    assert (await b.call("calibrate_threshold", agent_id=""))["sampled_embeddings"] == 12
    assert (await b.call("set_recall_precision", agent_id="shared", precision="lenient"))["ok"]

    assert await _stored(rsf_lib.db, "tenant-a") == before
    read_a = await a.call("get_recall_precision", agent_id="shared")
    assert (read_a["precision"], read_a["overridden"]) == ("strict", True)
    assert (await _stored(rsf_lib.db, "tenant-b"))["shared"]["beta"] == 0.5


async def test_no_fused_gate_without_a_fused_score_or_an_embedder(
    db: Database, local_settings: Settings, local_embedder: EmbeddingProvider
) -> None:
    lib = Library(db, dataclasses.replace(local_settings, recall_mode="cascade"), local_embedder)
    tenant, _ = await _tenant(lib, "acme")
    await _seed(lib, tenant, "alice", _dated(TOPICS[:3], first_day=0))
    request = calibration.CalibrationRequest("alice")
    cascade = await calibration.calibrate_threshold(lib, tenant, request)
    assert cascade.persisted is True
    assert cascade.fused_gate is None
    lexical = Library(db, local_settings)  # embeddings off, yet the stored rows have vectors
    report = await calibration.calibrate_threshold(lexical, tenant, request)
    assert report.sampled_embeddings == 18
    assert report.fused_gate is None
    confidence = dataclasses.replace(local_settings, recall_mode="cascade", confidence_enabled=True)
    confident = Library(db, confidence, local_embedder)
    scored = await calibration.calibrate_threshold(confident, tenant, request)
    assert scored.fused_gate is not None
    assert scored.fused_gate.signal == "confidence"
    assert scored.old_threshold == report.stats.threshold


async def test_nearest_neighbours_stand_in_without_sessions_and_zscore_is_mean_plus_z_std(
    rsf_lib: Library,
) -> None:
    tenant, _ = await _tenant(rsf_lib, "acme")
    far_apart = [(s, (START + timedelta(days=i)).isoformat()) for i, s in enumerate(TOPICS[0])]
    far_apart += [
        (s, (START + timedelta(days=10 + i)).isoformat()) for i, s in enumerate(TOPICS[1])
    ]
    await _seed(rsf_lib, tenant, "alice", far_apart)
    nn = await calibration.calibrate_threshold(
        rsf_lib, tenant, calibration.CalibrationRequest("alice")
    )
    assert nn.proxy_source == "nn_fallback"
    z = await calibration.calibrate_threshold(
        rsf_lib, tenant, calibration.CalibrationRequest("alice", method="zscore", z_factor=2)
    )
    spread = z.stats
    assert spread.threshold == pytest.approx(spread.mean + 2 * spread.std, abs=2e-4)
    assert z.proxy_source is None
    assert spread.null_admit_rate < 0.1
