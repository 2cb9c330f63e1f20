"""OAuth 2.1 routes for the MCP endpoint (the MCP authorization spec).

Always: the protected-resource metadata (RFC 9728). With the built-in authorization
server (``CPERSONA_PUBLIC_URL`` set, no external issuer): its metadata (RFC 8414),
``/authorize`` with the consent page, ``/token``, ``/revoke`` (RFC 7009) and
``/register`` (RFC 7591). The documents and the token, revocation and registration
endpoints answer browser clients from any origin (they carry no cookie credential); the
consent page does not.
Every route checks the Host header (DNS-rebinding protection; Origin is free here), and a
database that is down or busy answers every route with the edge's 503 and ``Retry-After``
(these routes are not behind the ``/mcp`` edge, whose answer it is), never a 500.
How a bearer token is checked on ``/mcp`` is :mod:`service.app.oauth.bearer`; the
built-in server's clients, codes and tokens (their storage and rules) are
:mod:`service.app.oauth.server`, an external issuer's JWT checks
:mod:`service.app.oauth.issuer`, and what both raise :mod:`service.app.oauth.refusals`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from service.app import answers
from service.app.hosts import HostGuard
from service.app.oauth import metadata
from service.app.oauth.authorize import AuthorizeEndpoint
from service.app.oauth.bearer import PRM_PATH
from service.app.oauth.token import RegisterEndpoint, RevokeEndpoint, TokenEndpoint
from service.errors import Unavailable
from service.memory.library import Library

Endpoint = Callable[[Request], Awaitable[Response]]
CORS = {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
    "access-control-max-age": "600",
}


def open_to_browsers(endpoint: Endpoint) -> Endpoint:
    """Answer CORS preflights and mark every answer readable from any origin."""

    async def handle(request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=CORS)
        response = await endpoint(request)
        response.headers["access-control-allow-origin"] = "*"
        return response

    return handle


def degraded_as_503(endpoint: Endpoint) -> Endpoint:
    """Answer an Unavailable (database down or its pool busy) with 503 and Retry-After."""

    async def handle(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Unavailable as exc:
            return answers.refusal_response(answers.unavailable_refusal(exc), None, False)

    return handle


def routes(lib: Library, hosts: HostGuard) -> list[Route]:
    """The OAuth routes of ``lib``'s settings, each behind the Host check ``hosts``."""
    settings = lib.settings
    resource = open_to_browsers(metadata.protected_resource_endpoint(settings))
    found = [
        (PRM_PATH, resource, ["GET", "OPTIONS"]),
        (f"{PRM_PATH}/mcp", resource, ["GET", "OPTIONS"]),
    ]
    if settings.oauth_mode == "builtin":
        found += [
            (
                "/.well-known/oauth-authorization-server",
                open_to_browsers(metadata.authorization_server_endpoint(settings)),
                ["GET", "OPTIONS"],
            ),
            ("/authorize", AuthorizeEndpoint(lib).handle, ["GET", "POST"]),
            ("/token", open_to_browsers(TokenEndpoint(lib).handle), ["POST", "OPTIONS"]),
            ("/revoke", open_to_browsers(RevokeEndpoint(lib).handle), ["POST", "OPTIONS"]),
            ("/register", open_to_browsers(RegisterEndpoint(lib).handle), ["POST", "OPTIONS"]),
        ]
    return [
        Route(path, hosts.guarded(degraded_as_503(endpoint)), methods=methods)
        for path, endpoint, methods in found
    ]
