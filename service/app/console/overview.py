"""The tenant's usage, queue and exports in the console.

- **Usage** (``/console/usage``): the last 30 UTC days, per day and tool, from the usage
  meter (``service.memory.usage.report``): a bar chart of tokens delivered and saved per
  day, drawn as SVG on the server (readable without script; each bar has a title), and the
  table of every day and tool; beside it the embedding queue (``get_queue_status``'s
  library call). Usage and the queue are the whole tenant's, so the page needs what the
  tools need for a tenant-wide view: ``get_queue_status`` in the key's tool set and read
  on every agent (the ``*`` sweep); otherwise it does not exist (404).
- **Health check** (a button of the usage page, ``POST /console/health``): runs
  ``check_health`` over every agent, without repairs, as the tool itself (through the
  dispatcher: tool set, grants, usage) and shows its status, its severity counts and each
  issue's type, severity and check — never the findings' details, which may quote rows.
- **Export** (``/console/export?agent=NAME``): the agent's CPersona JSONL, streamed as it
  is read (``service.memory.portability.export``), with ``/v1/export``'s grant: read-write
  on the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from service.app.console import render
from service.app.console.auth import Session
from service.app.console.calls import ToolCalls
from service.app.console.security import HEADERS
from service.mcp import acl, tools
from service.memory import usage
from service.memory.library import Library
from service.memory.portability import export
from service.memory.queue import backlog
from service.models import TenantId

DAYS: Final = 30
CHART_HEIGHT: Final = 160
BAR_WIDTH: Final = 12
BAR_GAP: Final = 6
STREAM_CHUNKS: Final = 8
"""Export chunks buffered ahead of the socket (backpressure beyond that)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Bar:
    """One day of the chart: its two bars' heights and what they stand for."""

    x: int
    day: date
    delivered: int
    saved: int
    delivered_height: int
    saved_height: int


def chart(totals: dict[date, tuple[int, int]], today: date) -> list[Bar]:
    """The last :data:`DAYS` days, oldest first, scaled to :data:`CHART_HEIGHT`."""
    days = [today - timedelta(days=back) for back in range(DAYS - 1, -1, -1)]
    peak = max([1, *(max(pair) for pair in totals.values())])
    bars = []
    for index, day in enumerate(days):
        delivered, saved = totals.get(day, (0, 0))
        bars.append(
            Bar(
                x=index * (2 * BAR_WIDTH + BAR_GAP),
                day=day,
                delivered=delivered,
                saved=saved,
                delivered_height=round(delivered * CHART_HEIGHT / peak),
                saved_height=round(saved * CHART_HEIGHT / peak),
            )
        )
    return bars


def tenant_wide(session: Session, tool: str) -> bool:
    """Whether the key may see the whole tenant's figures: ``tool`` in its tool set and
    read on every agent (a sweep)."""
    caller = session.caller
    return tools.in_tool_set(caller.tool_set, tool) and acl.allows(caller.grants, acl.SWEEP, "read")


class Overview:
    """The usage page, the health check and the export download of one application."""

    def __init__(self, lib: Library, calls: ToolCalls) -> None:
        self._lib = lib
        self._calls = calls

    async def health(self, request: Request, session: Session) -> Response:
        """Run check_health (every agent, no repairs) as the tool and show its summary."""
        answer = await self._calls.call(session.caller, "check_health", {"fix": False})
        if answer.failed:
            message = f"The health check was refused: {answer.message}"
            return render.error_page("Not done", message, 403, session)
        body = answer.body
        issues = [
            {name: str(issue.get(name, "")) for name in ("type", "severity", "check")}
            for issue in body.get("issues", [])
            if isinstance(issue, dict)
        ]
        context = {"session": session, "page": "usage", "issues": issues}
        context |= {"status": str(body.get("status", "")), "ran_at": datetime.now(UTC)}
        context |= {
            "summary": body.get("severity_summary", {}),
            "checks": body.get("checks_run", []),
        }
        return render.page("health.html", context)

    async def usage(self, request: Request, session: Session) -> Response:
        if not tenant_wide(session, "get_queue_status"):
            return render.error_page(
                "Not found", "This key sees no tenant-wide usage.", 404, session
            )
        tenant_id = session.caller.tenant_id
        rows = await usage.report(self._lib, tenant_id, DAYS)
        queue = await backlog.queue_status(self._lib, tenant_id)
        totals: dict[date, tuple[int, int]] = defaultdict(lambda: (0, 0))
        for row in rows:
            delivered, saved = totals[row.day]
            totals[row.day] = (delivered + row.tokens_delivered, saved + row.tokens_saved)
        bars = chart(totals, datetime.now(UTC).date())
        width = DAYS * (2 * BAR_WIDTH + BAR_GAP)
        context = {"session": session, "page": "usage", "rows": rows, "bars": bars}
        context |= {"queue": queue.active, "chart_width": width, "chart_height": CHART_HEIGHT}
        return render.page("usage.html", {**context, "bar_width": BAR_WIDTH})

    async def export(self, request: Request, session: Session) -> Response:
        """The agent's JSONL, streamed; 404 unless the key may read-write the agent."""
        agent = request.query_params.get("agent", "")
        caller = session.caller
        if not agent or not acl.allows(caller.grants, agent, "read-write"):
            return render.error_page(
                "Not found", "This key may not export that agent.", 404, session
            )
        if not tools.in_tool_set(caller.tool_set, "export_memories"):
            return render.error_page(
                "Not found", "This key may not export that agent.", 404, session
            )
        headers = {
            **HEADERS,
            "content-disposition": 'attachment; filename="cpersona-export.jsonl"',
        }
        body = self._stream(caller.tenant_id, agent)
        return StreamingResponse(body, media_type="application/x-ndjson", headers=headers)

    async def _stream(self, tenant_id: TenantId, agent: str) -> AsyncIterator[bytes]:
        """The export's bytes as they are read, at most :data:`STREAM_CHUNKS` ahead of
        the socket; the export is cancelled when the client goes."""
        chunks: asyncio.Queue[bytes] = asyncio.Queue(STREAM_CHUNKS)
        request = export.ExportRequest(agent, False)
        task = asyncio.create_task(export.export_jsonl(self._lib, tenant_id, request, chunks.put))
        try:
            while True:
                getter = asyncio.ensure_future(chunks.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                    continue
                getter.cancel()
                while not chunks.empty():
                    yield chunks.get_nowait()
                task.result()  # the export's own error, if it failed
                return
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
