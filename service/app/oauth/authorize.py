"""``/authorize``: the authorization code grant with PKCE (S256), and its consent page.

``GET`` checks the request and shows the consent page; the page posts the same fields
back with the API key. Both methods check everything again (the client, the redirect
URI, exactly as registered, the PKCE challenge, the RFC 8707 resource), because the
post's fields come from the browser. A request naming an unknown client or redirect
URI gets an error page (never a redirect to an unchecked URI); other errors go back to
the client's redirect URI with ``error``, ``state`` and ``iss`` (RFC 9207).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from service.app.oauth import consent, forms
from service.logs import get_logger
from service.memory import tenants
from service.memory.library import Library
from service.memory.oauth import server

log = get_logger("service.oauth")
FIELDS = ("response_type", "client_id", "redirect_uri", "code_challenge",
          "code_challenge_method", "state", "scope", "resource")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Checked:
    """An authorization request whose client and redirect URI are known."""

    client: server.Client
    redirect_uri: str
    fields: dict[str, str]


class Unreturnable(Exception):
    """The request cannot be answered at a redirect URI (unknown client or URI)."""


def same_resource(given: str, ours: str) -> bool:
    return given.rstrip("/") == ours.rstrip("/")


def redirect(checked: Checked, issuer: str, **params: str) -> Response:
    """Back to the client: ``params`` plus ``state`` and ``iss``."""
    state = checked.fields.get("state")
    query = {**params, **({"state": state} if state else {}), "iss": issuer}
    separator = "&" if "?" in checked.redirect_uri else "?"
    target = f"{checked.redirect_uri}{separator}{urlencode(query)}"
    return RedirectResponse(target, 302, headers=consent.safe_headers(checked.redirect_uri))


class AuthorizeEndpoint:
    """GET shows the consent page, POST grants (or denies) a code."""

    def __init__(self, lib: Library) -> None:
        self._lib = lib
        self.issuer = lib.settings.oauth_public_base
        self.resource = f"{self.issuer}/mcp"

    async def handle(self, request: Request) -> Response:
        try:
            post = request.method == "POST"
            raw = await forms.form_fields(request) if post else dict(request.query_params)
        except forms.Unreadable as unreadable:
            return unreadable.response
        fields = {name: raw[name] for name in FIELDS if raw.get(name)}
        try:
            checked = await self._check_client(fields)
        except Unreturnable as reason:
            return consent.error_page(str(reason))
        problem = self._problem(checked)
        if problem is not None:
            return redirect(checked, self.issuer, error=problem[0], error_description=problem[1])
        if request.method != "POST":
            return consent.page(request, checked.client.name, checked.fields)
        return await self._decide(request, checked, raw)

    async def _check_client(self, fields: dict[str, str]) -> Checked:
        client = await server.find_client(self._lib.db, fields.get("client_id", ""))
        if client is None:
            raise Unreturnable("This application is not registered with this server.")
        uri = fields.get("redirect_uri")
        if uri is None and len(client.redirect_uris) == 1:
            uri = client.redirect_uris[0]
        if uri is None or not server.redirect_uri_registered(client, uri):
            raise Unreturnable("The redirect URI is not one this application registered.")
        return Checked(client, uri, {**fields, "redirect_uri": uri})

    def _problem(self, checked: Checked) -> tuple[str, str] | None:
        fields = checked.fields
        if fields.get("response_type") != "code":
            return "unsupported_response_type", "response_type must be code"
        if "authorization_code" not in checked.client.grant_types:
            return "unauthorized_client", "the client did not register the authorization_code grant"
        if not fields.get("code_challenge") or fields.get("code_challenge_method") != "S256":
            return "invalid_request", "PKCE with code_challenge_method S256 is required"
        resource = fields.get("resource")
        if resource is not None and not same_resource(resource, self.resource):
            return "invalid_target", f"this server's resource is {self.resource}"
        return None

    async def _decide(self, request: Request, checked: Checked, raw: Mapping[str, str]) -> Response:
        if not consent.csrf_valid(request, raw.get(consent.CSRF_FIELD, "")):
            return consent.error_page("The form expired or was not sent by this page; start again.")
        if raw.get("decision") == "deny":
            return redirect(checked, self.issuer, error="access_denied")
        caller = await tenants.authenticate(self._lib.db, raw.get("api_key", "").strip())
        if caller is None:
            return consent.page(
                request,
                checked.client.name,
                checked.fields,
                error="That API key is not valid (unknown, revoked or expired).",
                status=401,
            )
        code = await server.issue_code(
            self._lib.db,
            caller,
            server.Consent(
                client_id=checked.client.client_id,
                redirect_uri=checked.redirect_uri,
                code_challenge=checked.fields["code_challenge"],
                resource=self.resource,
                scope=checked.fields.get("scope", ""),
            ),
        )
        log.info(
            "oauth_authorized",
            tenant=caller.tenant_slug,
            key_id=caller.key_id,
            client_id=checked.client.client_id,
            client_name=checked.client.name[:100],
        )
        return redirect(checked, self.issuer, code=code)
