"""The consent page: where a person authorizes a connector by pasting an API key.

One small HTML form, no script. Every value is escaped. The response headers keep it
out of frames and caches, send no referrer, and allow the form to post only to this
page and to follow the redirect to the client's own redirect URI (Chromium applies
``form-action`` to the redirect that answers a form post). CSRF protection is a
double-submit token: a random value in an ``HttpOnly; SameSite=Strict`` cookie and in a
hidden field, compared in constant time on the post.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from html import escape
from string import Template
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse

CSRF_COOKIE = "cpersona_oauth_csrf"
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
    if redirect_uri:
        parts = urlsplit(redirect_uri)
        targets += (
            f" {parts.scheme}://{parts.netloc}"
            if parts.scheme in ("http", "https")
            else f" {parts.scheme}:"
        )
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


def csrf_valid(request: Request, presented: str) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), presented.encode())


def page(
    request: Request,
    client_name: str,
    fields: Mapping[str, str],
    *,
    error: str = "",
    status: int = 200,
) -> HTMLResponse:
    """The consent form carrying the authorization request in hidden fields."""
    token = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
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
    response = HTMLResponse(body, status, headers=safe_headers(fields.get("redirect_uri")))
    response.set_cookie(
        CSRF_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=request.url.path,
    )
    return response


def error_page(message: str, status: int = 400) -> HTMLResponse:
    """A request that cannot be sent back to the client (unknown client or redirect URI)."""
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization '
        f"failed</title></head><body><h1>Authorization failed</h1><p>{escape(message)}</p>"
        "</body></html>"
    )
    return HTMLResponse(body, status, headers=safe_headers())
