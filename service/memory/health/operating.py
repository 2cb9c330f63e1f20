"""Operating-context checks: the tenant's stored context no longer validates, or its
instructions summary is too long to send to every client at initialize
(docs/tools.md, "get_operating_context").

A context that fails validation makes the tenant dormant silently (a broken context
must never take memory down), so this is the one place where the operator learns
of it. Both are report-only: the operator re-sets the context from a file.
"""

from __future__ import annotations

from typing import Any

from service.db import operating_context as operating_context_queries
from service.db.pool import Connection
from service.errors import InvalidInput
from service.memory.health.base import Findings, Scope
from service.memory.operating_context import model, parse


def _summary(document: dict[str, Any]) -> str:
    instructions = document.get("instructions")
    summary = instructions.get("summary") if isinstance(instructions, dict) else None
    return summary if isinstance(summary, str) else ""


async def operating_context_parse(conn: Connection, scope: Scope) -> Findings | None:
    row = await operating_context_queries.operating_context(conn, scope.tenant_id)
    if row is None:
        return None
    try:
        parse.parse_document(row.document)
    except InvalidInput as exc:
        return {
            "type": "operating_context_parse_error",
            "revision": row.revision,
            "detail": exc.message,
            "hint": (
                "the tenant's operating context is dormant until it validates; an operator "
                "re-sets it with `cpersona-service context set --tenant SLUG FILE.toml`"
            ),
        }
    return None


async def operating_context_size(conn: Connection, scope: Scope) -> Findings | None:
    row = await operating_context_queries.operating_context(conn, scope.tenant_id)
    if row is None:
        return None
    length = len(_summary(row.document))
    if length <= model.SUMMARY_WARN_CHARS:
        return None
    return {
        "type": "operating_context_summary_oversized",
        "revision": row.revision,
        "summary_len": length,
        "budget": model.SUMMARY_WARN_CHARS,
        "hint": "move detail into [[doctrine]] sections (served by get_operating_context)",
    }
