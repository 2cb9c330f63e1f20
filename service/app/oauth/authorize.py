"""``/authorize``: the authorization code grant with PKCE (S256), and its consent page.

``GET`` checks the request and shows the consent page; the page posts the same fields
back with the API key. Both methods check everything again (the client, the redirect
URI, exactly as registered, the PKCE challenge, the RFC 8707 resource), because the
post's fields come from the browser. Anyone may register a client, so a registered
redirect URI is not trusted to receive a browser without the person's say (RFC 9700
section 4.11): an invalid request is answered on this server's own error page, with a
link back to the client that the person may follow; only a valid request the person
approved or denied is redirected, with ``code`` or ``error``, ``state`` and ``iss`` (RFC
9207). A client or redirect URI that is unknown, or a stored redirect URI that fails
today's checks (``redirects.py``), gets the error page without a link.

Posts that try an API key are throttled (``attempts.py``); each wrong key is logged
(``audit.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from service.app.oauth import audit, consent, forms, server
from service.app.oauth.attempts import ConsentAttempts
from service.app.oauth.redirects import redirect_uri_problem
from service.logs import get_logger, throttled
from service.memory import tenants
from service.memory.library import Library

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


def return_url(checked: Checked, issuer: str, **params: str) -> str:
    """The client's redirect URI with ``params`` plus ``state`` and ``iss``."""
    state = checked.fields.get("state")
    query = {**params, **({"state": state} if state else {}), "iss": issuer}
    separator = "&" if "?" in checked.redirect_uri else "?"
    return f"{checked.redirect_uri}{separator}{urlencode(query)}"


def redirect(checked: Checked, issuer: str, **params: str) -> Response:
    """Back to the client (after the person acted on the consent page)."""
    target = return_url(checked, issuer, **params)
    return RedirectResponse(target, 302, headers=consent.safe_headers(checked.redirect_uri))


def invalid_request_page(checked: Checked, issuer: str, error: str, description: str) -> Response:
    """An invalid request of a known client, shown here; the way back is a link."""
    back = return_url(checked, issuer, error=error, error_description=description)
    message = f"{checked.client.name} sent a request this server refuses: {error} ({description})."
    return consent.error_page(message, 400, back)


class AuthorizeEndpoint:
    """GET shows the consent page, POST grants (or denies) a code."""

    def __init__(self, lib: Library) -> None:
        self._lib = lib
        self.issuer = lib.settings.oauth_public_base
        self.resource = f"{self.issuer}/mcp"
        self.attempts = ConsentAttempts(lib.settings)

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
            return invalid_request_page(checked, self.issuer, *problem)
        if request.method != "POST":
            return consent.page(
                request, checked.client.name, checked.fields, secure=self.secure(request)
            )
        return await self._decide(request, checked, raw)

    def secure(self, request: Request) -> bool:
        """Whether the browser reaches this page over https (the CSRF cookie's prefix)."""
        return self.issuer.startswith("https://") or request.url.scheme == "https"

    async def _check_client(self, fields: dict[str, str]) -> Checked:
        client = await server.find_client(self._lib.db, fields.get("client_id", ""))
        if client is None:
            raise Unreturnable("This application is not registered with this server.")
        uri = fields.get("redirect_uri")
        if uri is None and len(client.redirect_uris) == 1:
            uri = client.redirect_uris[0]
        if uri is None or not server.redirect_uri_registered(client, uri):
            raise Unreturnable("The redirect URI is not one this application registered.")
        if redirect_uri_problem(uri) is not None:
            raise Unreturnable("The redirect URI of this application is not accepted any more.")
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
        secure = self.secure(request)
        if not consent.csrf_valid(request, raw.get(consent.CSRF_FIELD, ""), secure):
            return consent.error_page("The form expired or was not sent by this page; start again.")
        if raw.get("decision") == "deny":
            return redirect(checked, self.issuer, error="access_denied")
        pasted = raw.get("api_key", "").strip()
        wait = self.attempts.wait(audit.address(request), pasted)
        if wait:
            return self._throttled(request, checked, pasted, wait)
        caller = await tenants.authenticate(self._lib.db, pasted)
        if caller is None:
            audit.consent_refused(request, checked.client.client_id, pasted)
            return consent.page(
                request,
                checked.client.name,
                checked.fields,
                secure=secure,
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

    def _throttled(self, request: Request, checked: Checked, pasted: str, wait: int) -> Response:
        """The consent page again, 429 with Retry-After; one log line per address, client
        and interval (a script hammering the page does not flood the log)."""
        client_id = checked.client.client_id
        suppressed = throttled("oauth_consent_throttled", audit.address(request), client_id)
        if suppressed is not None:
            audit.consent_throttled(request, client_id, pasted, suppressed)
        return consent.page(
            request,
            checked.client.name,
            checked.fields,
            secure=self.secure(request),
            error=f"Too many attempts; try again in {wait} seconds.",
            status=429,
            headers={"retry-after": str(wait)},
        )
