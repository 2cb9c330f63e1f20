"""The filters of the console's lists and search (docs/console.md, "Filters"), read from a
page's query string.

- **Project**: passes the operating context's gate exactly as a read tool's
  ``project_id`` does (``service.memory.operating_context.gate``, as the dispatcher
  applies it): ``@auto`` resolves to the agent's default project, a project outside the
  registry is warned about and still read (a read is never refused), and an empty field
  reads every project. Keys carry no project scope, so this filter is the whole project
  gate of the console.
- **Dates** (``from`` and ``to``, UTC days ``YYYY-MM-DD``, both included): on a list, the
  rows *stored* on those days (the list's own order, so its keyset stays exact); on a
  search, recall's time cue ``{after: from, before: to, confidence: "sure"}`` over each
  row's own time, which moves rows of the period up and holds a few more, never removing
  one (what an agent's recall with that cue returns).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from urllib.parse import urlencode

from service.memory import bounds, console
from service.memory.library import Library
from service.memory.operating_context import gate, storage
from service.memory.recall import cue
from service.models import TenantId

NAMES = ("q", "channel", "project", "source", "from", "to")
"""The query-string fields a filter form carries (all bounded where they are read)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Project:
    """A project filter after the gate: ``project_id`` to read with (None: every project)
    and what the gate said (a warning, or how ``@auto`` resolved; '' when nothing)."""

    project_id: str | None
    note: str


async def project(lib: Library, tenant_id: TenantId, agent: str, raw: str) -> Project:
    """``raw`` (the form's project field) through the gate of a read, as the tools apply
    it; an empty field costs no database round trip and reads every project."""
    bounds.check_text("project", raw, bounds.IDENTIFIER_CHARS)
    if not raw:
        return Project(None, "")
    context = await storage.get_context(lib, tenant_id)
    result = gate.gate(context, agent, raw, is_write=False)
    resolved = raw if result.project_id is None else result.project_id
    note = result.warning or ""
    if result.echo_resolved:
        note = f"@auto resolved to project {resolved!r}" + (f"; {note}" if note else "")
    return Project(resolved, note)


def days(params: Mapping[str, str]) -> console.RecordsFilter:
    """The ``from`` and ``to`` days of a page as the stored-time bounds of a list
    (InvalidInput for a field that is no ``YYYY-MM-DD`` day or a backwards range)."""
    first = console.parse_day("from", params.get("from", ""))
    last = console.parse_day("to", params.get("to", ""))
    start, end = console.day_range(first, last)
    return console.RecordsFilter(stored_from=start, stored_before=end)


def time_cue(params: Mapping[str, str]) -> cue.TimeCue | None:
    """The ``from`` and ``to`` days of a search as recall's time cue (``sure``: the period
    is those days exactly); None when neither is set. InvalidInput as :func:`days`."""
    days(params)  # the same checks and messages as a list's
    window = {"after": params.get("from", ""), "before": params.get("to", "")}
    given: dict[str, object] = {name: day for name, day in window.items() if day}
    if not given:
        return None
    return cue.parse({**given, "confidence": "sure"})


def query_string(values: Mapping[str, str]) -> str:
    """``values`` without the empty ones, URL-encoded (a pager's link keeps the filters)."""
    return urlencode({name: value for name, value in values.items() if value})
