"""The discovery documents: protected-resource (RFC 9728) and authorization-server (RFC 8414).

Written as plain JSON with the exact strings clients compare: the issuer is the public
URL without a trailing slash, the resource is ``<public URL>/mcp``. The protected-resource
document is served at the path-suffixed location of ``/mcp`` and at the root (clients of
both discovery orders find it). Without OAuth (no public URL and no external issuer) it
still answers, naming no authorization server (RFC 9728 makes the list optional): the
server takes API keys only.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from service.app.oauth.bearer import request_base
from service.app.probes import Endpoint
from service.config import Settings
from service.models import JsonObject

CACHE = {"cache-control": "public, max-age=300"}


def issuer(settings: Settings, request: Request) -> str:
    """The authorization server clients are sent to (external or built-in)."""
    if settings.oauth_mode == "external":
        return settings.oauth_issuer
    return request_base(request.scope, settings.oauth_public_base)


def protected_resource(settings: Settings, request: Request) -> JsonObject:
    base = request_base(request.scope, settings.oauth_public_base)
    document: JsonObject = {
        "resource": f"{base}/mcp",
        "bearer_methods_supported": ["header"],
        "resource_name": "CPersona memory",
    }
    if settings.oauth_mode != "off":
        document["authorization_servers"] = [issuer(settings, request)]
    return document


def authorization_server(settings: Settings) -> JsonObject:
    base = settings.oauth_public_base
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
        "revocation_endpoint": f"{base}/revoke",
        "revocation_endpoint_auth_methods_supported": [
            "none",
            "client_secret_post",
            "client_secret_basic",
        ],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": [
            "none",
            "client_secret_post",
            "client_secret_basic",
        ],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": False,
    }


def protected_resource_endpoint(settings: Settings) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        return JSONResponse(protected_resource(settings, request), headers=CACHE)

    return endpoint


def authorization_server_endpoint(settings: Settings) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        return JSONResponse(authorization_server(settings), headers=CACHE)

    return endpoint
