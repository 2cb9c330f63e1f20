"""The web console at ``/console`` (docs/console.md): see, search and curate what a
tenant's agents remember, in a browser, with the same walls as the API.

Server-rendered HTML (:mod:`service.app.console.render`, Jinja2 autoescaped
everywhere), forms that work without JavaScript, the headers, cookies and CSRF of
:mod:`service.app.console.security`, sessions of :mod:`service.app.console.auth`. It
calls the library as the MCP tools do and never storage itself (the import-linter
contract "The console reaches data only through the library"). Every route checks the
Host header, and a database that is down or busy answers 503 with ``Retry-After``.
``CPERSONA_CONSOLE=false`` mounts none of it.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from service.app.console import render, security
from service.app.console.auth import Gate
from service.app.console.calls import ToolCalls
from service.app.console.curation import Curation
from service.app.console.operations import Operations
from service.app.console.overview import Overview
from service.app.console.pages import Pages
from service.app.hosts import HostGuard
from service.app.oauth import degraded_as_503
from service.memory.library import Library
from service.memory.usage import UsageCounter

STATIC = {"console.css": "text/css", "favicon.svg": "image/svg+xml"}
"""The console's own files (the CSP allows styles and images from this origin only)."""


def routes(lib: Library, hosts: HostGuard, usage: UsageCounter | None = None) -> list[Route]:
    """The console's routes (none when CPERSONA_CONSOLE is false), behind ``hosts``;
    its tool calls count in ``usage`` (the process's meter)."""
    if not lib.settings.console:
        return []
    gate = Gate(lib)
    pages = Pages(lib)
    calls = ToolCalls(lib, usage)
    curation = Curation(lib, calls)
    overview = Overview(lib, calls)
    operations = Operations(lib)
    files = {name: render.static(name) for name in STATIC}

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files:
            return Response(status_code=404, headers=security.HEADERS)
        headers = {**security.HEADERS, "cache-control": "max-age=300"}
        return Response(files[name], 200, headers, media_type=STATIC[name])

    found = [
        ("", gate.home, ["GET"]),
        ("/", gate.home, ["GET"]),
        ("/sign-in", gate.sign_in, ["GET", "POST"]),
        ("/sign-out", gate.any_signed_in(gate.sign_out), ["POST"]),
        ("/tenants", gate.operator_in(operations.tenants), ["GET"]),
        ("/agents", gate.signed_in(pages.agents), ["GET"]),
        ("/agent", gate.signed_in(pages.records), ["GET"]),
        ("/search", gate.signed_in(pages.search), ["GET"]),
        ("/record", gate.signed_in(curation.record), ["GET"]),
        ("/record/edit", gate.signed_in(curation.edit_form), ["GET"]),
        ("/record/{action}", gate.signed_in(curation.act), ["POST"]),
        ("/usage", gate.signed_in(overview.usage), ["GET"]),
        ("/health", gate.signed_in(overview.health), ["POST"]),
        ("/export", gate.signed_in(overview.export), ["GET"]),
        ("/static/{name}", static, ["GET"]),
    ]
    return [
        Route(security.PREFIX + path, hosts.guarded(degraded_as_503(endpoint)), methods=methods)
        for path, endpoint, methods in found
    ]
