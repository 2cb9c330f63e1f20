"""Record-shape checks: JSON columns of the wrong type, sources outside the canonical
``{type, id, name}`` shape, unattributed rows, and axis spellings that drift.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from service.db.health import content as content_queries, records as records_queries
from service.db.pool import Connection
from service.memory import text
from service.memory.health.base import Findings, Repairs, Scope

CANONICAL_TYPES = frozenset({"User", "Agent", "System"})
SOURCE_CLASSIFY_CAP = 1000
AXES = ("project_id", "channel")


async def invalid_json(conn: Connection, scope: Scope) -> Findings | None:
    """metadata that is not an object, or a source that is a number, array or boolean.

    Postgres stores only valid JSON, so CPersona's unparseable text has no twin here;
    the shape contract is what can be broken (by imports or hand edits)."""
    found = await records_queries.health_invalid_json(conn, scope.tenant_id, scope.agent)
    if found.bad_source + found.bad_metadata == 0:
        return None
    return {
        "type": "invalid_json",
        "bad_source": found.bad_source,
        "bad_metadata": found.bad_metadata,
        "repairable": found.repairable,
    }


async def fix_invalid_json(conn: Connection, scope: Scope) -> Repairs:
    return Repairs(
        fixed=await records_queries.health_reset_invalid_json(conn, scope.tenant_id, scope.agent)
    )


def _canonical(source: object) -> dict[str, Any] | None:
    """The canonical form of a legacy source, or None when it cannot be mapped without
    inventing a producer (the write seam's own normalisation decides)."""
    folded = text.normalise_source(source)
    if isinstance(folded, Mapping) and folded.get("type") in CANONICAL_TYPES:
        return dict(folded)
    return None


async def _source_repairs(
    conn: Connection, scope: Scope
) -> tuple[list[tuple[int, dict[str, Any]]], int, bool]:
    """(repairs, rows classified, whether every offending unlocked row was classified)."""
    rows = await records_queries.health_invalid_source_rows(
        conn, scope.tenant_id, scope.agent, SOURCE_CLASSIFY_CAP + 1
    )
    classified = rows[:SOURCE_CLASSIFY_CAP]
    repairs = [(row.id, new) for row in classified if (new := _canonical(row.source))]
    return repairs, len(classified), len(rows) <= SOURCE_CLASSIFY_CAP


async def invalid_source_type(conn: Connection, scope: Scope) -> Findings | None:
    """Sources that are bare strings or objects without a canonical type."""
    found = await records_queries.health_invalid_sources(conn, scope.tenant_id, scope.agent)
    if found.count == 0:
        return None
    repairs, classified, complete = await _source_repairs(conn, scope)
    issue: Findings = {"type": "invalid_source_type", "count": found.count}
    if found.locked:
        issue["locked"] = found.locked
    issue["repairable"] = len(repairs) if complete else None
    if not complete:
        issue["classified"] = classified
    elif not repairs:
        issue["hint"] = (
            "no offending row can be canonicalised without inventing a producer; "
            "rewriting them is a reviewed migration, not a maintenance run"
        )
    return issue


async def fix_invalid_source_type(conn: Connection, scope: Scope) -> Repairs:
    repairs, classified, _ = await _source_repairs(conn, scope)
    written = 0
    if repairs:
        ids, sources = zip(*repairs, strict=True)
        written = await records_queries.health_set_sources(conn, scope.tenant_id, ids, sources)
    left = await records_queries.health_invalid_sources(conn, scope.tenant_id, scope.agent)
    return Repairs(
        fixed=written,
        mapped=written,
        unmapped=classified - len(repairs),
        remaining=left.count - left.locked,
    )


async def anonymous_source(conn: Connection, scope: Scope) -> Findings | None:
    """Rows without producer attribution: the User sentinel (deep_check can recover
    names from a ``[name] `` prefix) and ``{}``/null (store's omitted source)."""
    found = await records_queries.health_anonymous_sources(conn, scope.tenant_id, scope.agent)
    if found.sentinel + found.unattributed == 0:
        return None
    issue: Findings = {"type": "anonymous_source", "count": found.sentinel + found.unattributed}
    if found.unattributed:
        issue["unattributed"] = found.unattributed
    if found.sentinel:
        issue["hint"] = "use deep_check with fix=true to recover names from content"
    return issue


def axis_key(value: str) -> str:
    """A spelling-insensitive key: case-folded letters and digits only (any script)."""
    folded = unicodedata.normalize("NFKC", value).casefold()
    return "".join(char for char in folded if char.isalnum())


def drift_clusters(values: Mapping[str, int], axis: str) -> list[list[dict[str, Any]]]:
    """Groups of two or more non-empty spellings that share an axis_key."""
    groups: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for value, count in sorted(values.items()):
        if value:
            groups[axis_key(value)].append({axis: value, "count": count})
    return [members for members in groups.values() if len(members) > 1]


async def axis_hygiene(conn: Connection, scope: Scope) -> Findings | None:
    """project_id / channel values that differ only by case or punctuation: the rows
    are split across buckets no single read unifies. Report-only: which spelling is
    right is the operator's call."""
    rows = await content_queries.health_axis_values(conn, scope.tenant_id, scope.agent)
    issue: Findings = {"type": "axis_naming_drift"}
    for axis in AXES:
        clusters = drift_clusters({r.value: r.count for r in rows if r.axis == axis}, axis)
        if clusters:
            issue[f"{axis}_clusters"] = clusters
    return issue if len(issue) > 1 else None
