"""The consent page: where a person authorizes a connector by pasting an API key.

One small HTML form, no script. Every value is escaped. The response headers keep it
out of frames and caches, send no referrer, and allow the form to post only to this
page and to follow the redirect to the client's own redirect URI (Chromium applies
``form-action`` to the redirect that answers a form post). CSRF protection is a
double-submit token: a random value in an ``HttpOnly; SameSite=Strict`` cookie and in a
hidden field, compared in constant time on the post. Served over https (a
``CPERSONA_PUBLIC_URL`` of https, or a TLS request) the cookie is ``__Host-`` prefixed
(``Secure``, ``Path=/``, no ``Domain``), so no sibling subdomain can plant or overwrite it.

The ``form-action`` source of the redirect URI is re-serialised from its parsed origin
(:func:`service.app.oauth.redirects.csp_source`), never copied from the URI.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from html import escape
from string import Template

from starlette.requests import Request
from starlette.responses import HTMLResponse

from service.app.oauth.redirects import csp_source

CSRF_COOKIE = "cpersona_oauth_csrf"
HOST_PREFIX = "__Host-"
CSRF_FIELD = "csrf"

PAGE = Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Connect $client to CPersona memory</title>
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}
input[type=password]{width:100%;padding:.5rem;font-family:monospace}
button{padding:.5rem 1rem;margin:1rem .5rem 0 0}.error{color:#b00020}</style>
</head><body>
<h1>Connect $client</h1>
<p><strong>$client</strong> asks to use this CPersona memory service, with the grants of
the API key you paste below (never more). Revoking that key disconnects it.</p>
<p>It will be sent back to <code>$redirect</code>.</p>
$error
<form method="post" action="$action">
$hidden
<label for="api_key">API key of your tenant (<code>cpk_...</code>)</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" required>
<button id="approve" type="submit" name="decision" value="approve">Authorize</button>
<button id="deny" type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</form></body></html>
""")


def safe_headers(redirect_uri: str | None = None) -> dict[str, str]:
    """Headers of every page and redirect of the authorization endpoint."""
    targets = "'self'"
    source = csp_source(redirect_uri) if redirect_uri else None
    if source is not None:
        targets += f" {source}"
    return {
        "content-security-policy": (
            "default-src 'none'; style-src 'unsafe-inline'; "
            f"form-action {targets}; frame-ancestors 'none'; base-uri 'none'"
        ),
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
    }


def cookie_name(secure: bool) -> str:
    """The CSRF cookie's name: ``__Host-`` prefixed when served over https."""
    return HOST_PREFIX + CSRF_COOKIE if secure else CSRF_COOKIE


def csrf_valid(request: Request, presented: str, secure: bool) -> bool:
    cookie = request.cookies.get(cookie_name(secure), "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), presented.encode())


def page(
    request: Request,
    client_name: str,
    fields: Mapping[str, str],
    *,
    secure: bool,
    error: str = "",
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """The consent form carrying the authorization request in hidden fields (``secure``:
    served over https, see :func:`cookie_name`)."""
    name = cookie_name(secure)
    token = request.cookies.get(name) or secrets.token_urlsafe(32)
    hidden = "\n".join(
        f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">'
        for name, value in {**fields, CSRF_FIELD: token}.items()
    )
    body = PAGE.substitute(
        client=escape(client_name),
        redirect=escape(fields.get("redirect_uri", "")),
        action=escape(request.url.path),
        hidden=hidden,
        error=f'<p class="error" role="alert">{escape(error)}</p>' if error else "",
    )
    all_headers = {**safe_headers(fields.get("redirect_uri")), **(headers or {})}
    response = HTMLResponse(body, status, headers=all_headers)
    response.set_cookie(
        name,
        token,
        httponly=True,
        samesite="strict",
        secure=secure,
        path="/" if secure else request.url.path,
    )
    return response


def error_page(message: str, status: int = 400, back: str = "") -> HTMLResponse:
    """An authorization request answered on this server's own page, not at the client's
    redirect URI: one that cannot go back (unknown client or redirect URI) or that is
    invalid (RFC 9700 section 4.11: no automatic redirect to a URI anyone may register).
    ``back``: the client's redirect URI with the error, offered as a link the person may
    follow."""
    link = f'<p><a href="{escape(back)}">Return to the application</a></p>' if back else ""
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization '
        f"failed</title></head><body><h1>Authorization failed</h1><p>{escape(message)}</p>"
        f"{link}</body></html>"
    )
    return HTMLResponse(body, status, headers=safe_headers())
