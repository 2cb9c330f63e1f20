"""reconstruct in the library (docs/tools.md, "reconstruct"): the pure stages (bundling,
the window and held clusters, structuring, query expansion's claiming rule) and, against
real Postgres, expansion reaching the lexical arms only and a declaration racing a delete."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from service.config import load_settings
from service.db.reconstruct import Cue, Link
from service.errors import ConfigError
from service.memory import associations, tenants
from service.memory.library import Library
from service.memory.memories import edits, store
from service.memory.recall import pipeline as recall
from service.memory.recall.records import Recalled
from service.memory.reconstruct import cues, pipeline
from service.memory.reconstruct.bundle import bundle
from service.memory.reconstruct.count import resolve_count
from service.memory.reconstruct.records import Cues, Row
from service.memory.reconstruct.request import ReconstructRequest
from service.memory.reconstruct.structure import structure
from service.models import TenantId

T0 = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def _row(n: int, seconds: float | None = 0, **fields: object) -> Row:
    at = None if seconds is None else T0 + timedelta(seconds=seconds)
    row = Row(
        ref=f"mem:{n}",
        kind="mem",
        id=n,
        text=f"text {n}",
        as_of="" if at is None else at.isoformat(),
        at=at,
        msg_id="",
        source_type="User",
        source_id="u1",
        project_id="",
        channel="",
        start=None,
        end=None,
        rank=n,
    )
    return dataclasses.replace(row, **fields)  # type: ignore[arg-type]


def test_a_burst_is_bounded_by_its_first_row_not_by_each_gap() -> None:
    rows = [_row(0, 0), _row(1, 50), _row(2, 100), _row(3, 140)]
    uf = bundle(rows, [], 60)
    assert uf.clusters() == [[0, 1], [2, 3]]
    assert uf.why == {
        0: "cluster:adjacent",
        1: "cluster:adjacent",
        2: "cluster:adjacent",
        3: "cluster:adjacent",
    }


def test_source_alone_and_unreadable_rows_never_bundle() -> None:
    rows = [_row(0, 0), _row(1, 10, channel=None), _row(2, 20, source_id="")]
    assert bundle(rows, [], 60).clusters() == [[0], [1], [2]]


def test_held_clusters_follow_the_window_and_never_compete_for_it() -> None:
    rows = [_row(0, reserved=True), _row(1), _row(2), _row(3, reserved=True)]
    clusters = [[0], [1], [2], [3]]
    window, held = pipeline.choose(clusters, rows, 1)
    assert (window, held) == ([[1]], [[0], [3]])
    assert pipeline.choose(clusters, rows, 0) == ([], [])
    assert pipeline.choose(clusters, rows, 5) == ([[1], [2]], [[0], [3]])


def test_versions_supersede_their_successor_and_a_tie_is_a_conflict() -> None:
    v1 = _row(1, 0, msg_id="m", rank=0)
    v2 = _row(2, 10, msg_id="m", rank=1)
    v3 = _row(3, 20, msg_id="m", rank=2)
    twin = _row(4, 20, msg_id="m", rank=3)
    item = structure([v1, v2, v3, twin], {}, 40)
    assert item.head.ref == "mem:3"  # the newest version of the best-ranked row
    roles = {claim.ref: [(r.ref, r.role) for r in claim.roles] for claim in item.claims}
    assert roles["mem:1"] == [("mem:2", "supersedes")]
    assert roles["mem:2"] == [("mem:3", "supersedes")]
    assert [c.refs for c in item.conflicts] == [("mem:3", "mem:4")]
    assert [claim.ref for claim in item.claims] == ["mem:3", "mem:4", "mem:2", "mem:1"]


def test_a_declared_role_between_retained_rows_is_not_repeated() -> None:
    a, b = _row(1, 0, source_id="x"), _row(2, 10, source_id="y")
    links = [Link("mem:2", "supersedes", "mem:1"), Link("mem:2", "owns", "mem:1")]
    item = structure([a, b], {"mem:2": "relation:supersedes"}, 40, links=links)
    claims = {claim.ref: claim for claim in item.claims}
    assert [(r.ref, r.role) for r in claims["mem:1"].roles] == [("mem:2", "supersedes")]
    assert claims["mem:2"].why == "relation:supersedes"
    assert item.independence_reason == "cluster:relation"


def test_the_evidence_cut_keeps_the_head_then_relevance_then_the_walk() -> None:
    members = [_row(1, 0, rank=1), _row(2, 30, rank=0), _row(3, 60, rank=2)]
    walked = [(_row(9, 90, rank=3), "relation:r", 1)]
    item = structure(members, {}, 2, walked)
    assert [claim.ref for claim in item.relevance] == ["mem:2", "mem:1"]
    assert item.claims_omitted == 2


def test_a_shorter_name_inside_a_claimed_span_names_nothing() -> None:
    found = [
        Cue(1, "mizeye", "Mizeye", "mizeye", (("MZ", "mz"),)),
        Cue(2, "eye", "Eye", "eye", (("Oculus", "oculus"),)),
    ]
    assert cues.terms_of("mizeye status", found) == Cues(("Mizeye",), ("MZ",), 0)
    both = cues.terms_of("mizeye and eye", found)
    assert both.entities == ("Mizeye", "Eye")
    assert both.terms == ("MZ", "Oculus")


def test_count_resolution_clamps_forces_and_widens_under_pro() -> None:
    assert resolve_count(50).effective == 10
    assert resolve_count(50).clamped
    assert resolve_count(-3).effective == 0
    assert resolve_count(None, "pro").effective == 15
    forced = resolve_count(3, forced=7)
    assert (forced.effective, forced.source, forced.reported) == (7, "operator_forced", True)


async def _tenant(lib: Library) -> TenantId:
    return TenantId((await tenants.create_tenant(lib.db, "acme")).id)


async def _memory(lib: Library, tenant: TenantId, content: str, **rider: object) -> int:
    request = store.StoreRequest("a", {"content": content}, associations=rider or None)
    stored = await store.store(lib, tenant, request)
    assert isinstance(stored, store.Stored)
    return stored.memory_id


async def test_expansion_reaches_the_lexical_arms_and_an_empty_one_changes_nothing(
    lib: Library,
) -> None:
    tenant = await _tenant(lib)
    mem = await _memory(lib, tenant, "BillSvc invoices nightly")
    plain = recall.RecallRequest("a", "billing service")
    assert (await recall.recall(lib, tenant, plain)).rows == ()
    widened = dataclasses.replace(plain, extra_lexical_terms=("BillSvc", "x"))
    found = (await recall.recall(lib, tenant, widened)).rows
    assert [r.ref for r in found if isinstance(r, Recalled)] == [f"mem:{mem}"]
    same = dataclasses.replace(plain, query="invoices", extra_lexical_terms=())
    assert (await recall.recall(lib, tenant, same)).rows == (
        await recall.recall(lib, tenant, recall.RecallRequest("a", "invoices"))
    ).rows


async def test_a_declaration_racing_a_delete_leaves_nothing_dangling_in_the_answer(
    lib: Library,
) -> None:
    """Round after round, a declaration anchored on a record races that record's delete;
    whichever wins, the answer's claims name only records that still exist."""
    tenant = await _tenant(lib)
    hit = await _memory(lib, tenant, "the ledger uses jsonb", entities=[{"name": "Ledger"}])
    for n in range(6):
        doomed = await _memory(lib, tenant, f"doomed note {n}")
        declaration = associations.Declaration(
            agent_id="a",
            anchor_ref=f"mem:{doomed}",
            associations={
                "entities": [{"name": f"Aurora{n}"}],
                "relations": [{"subject": f"Aurora{n}", "predicate": "r", "object": "Ledger"}],
            },
        )
        await asyncio.gather(
            associations.declare(lib, tenant, declaration),
            edits.delete_memory(lib, tenant, doomed),
            return_exceptions=True,
        )
        answer = await pipeline.reconstruct(lib, tenant, ReconstructRequest("a", "jsonb"))
        (item,) = answer.items
        assert [claim.ref for claim in item.claims] == [f"mem:{hit}"]


def test_the_window_and_breadth_settings_are_read_and_checked() -> None:
    settings = load_settings(
        {
            "CPERSONA_RECONSTRUCT_FORCED_COUNT": "3",
            "CPERSONA_RECONSTRUCT_TOP_K": "7",
            "CPERSONA_RECONSTRUCT_MAX_HOPS": "1",
            "CPERSONA_RECONSTRUCT_MAX_EVIDENCE": "5",
            "CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS": "0",
        }
    )
    assert (settings.reconstruct_forced_count, settings.reconstruct_top_k) == (3, 7)
    for name, value in (
        ("CPERSONA_RECONSTRUCT_DEFAULT_COUNT", "11"),
        ("CPERSONA_RECONSTRUCT_FORCED_COUNT", "11"),
    ):
        with pytest.raises(ConfigError, match=name):
            load_settings({name: value})
    with pytest.raises(ConfigError, match="CPERSONA_RECONSTRUCT_MAX_HOPS"):
        load_settings({"CPERSONA_RECONSTRUCT_MAX_HOPS": "6"})


async def test_operator_settings_set_the_window_and_the_breadth(lib: Library) -> None:
    tenant = await _tenant(lib)
    for n in range(4):
        await _memory(lib, tenant, f"billing note {n}")
    configured = dataclasses.replace(
        lib.settings, reconstruct_forced_count=2, reconstruct_top_k=3, reconstruct_max_hops=1
    )
    operated = Library(lib.db, configured, lib.embedder)
    answer = await pipeline.reconstruct(operated, tenant, ReconstructRequest("a", "billing"))
    assert (answer.count.effective, answer.count.source) == (2, "operator_forced")
    assert (answer.bounds.top_k, answer.bounds.max_hops) == (3, 1)
    assert answer.candidate_count == 3
