"""The operator view (``/console/tenants``): every tenant with its counts, its usage of
the last 30 days and its queue health, 50 a page by slug — aggregates only, never memory
content (docs/console.md, "Operators"). Only an operator key's session reaches it."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from service.app.console import render
from service.app.console.auth import OperatorSession
from service.memory import operators
from service.memory.library import Library


class Operations:
    def __init__(self, lib: Library) -> None:
        self._lib = lib

    async def tenants(self, request: Request, session: OperatorSession) -> Response:
        found = await operators.list_tenants(self._lib, request.query_params.get("after", ""))
        context = {"session": session, "page": "tenants", "tenants": found.tenants}
        return render.page("tenants.html", {**context, "next_after": found.next_after})
