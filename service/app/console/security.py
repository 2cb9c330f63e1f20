"""The console's walls in the browser: response headers, the session cookie, CSRF.

- **Headers** of every console answer: a CSP that allows only this origin's stylesheet
  and nothing else (no script, no inline style, no frames, forms post only here),
  ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``, ``nosniff``, a referrer only
  to this origin (``same-origin``: with ``no-referrer`` Chromium sends ``Origin: null`` on
  the console's own form posts, which the Origin check must then refuse), and
  ``no-store`` (pages hold memory content).
- **The session cookie** holds a random id (:mod:`service.memory.console`); it is
  ``HttpOnly`` and ``SameSite=Strict``, and over https (a ``CPERSONA_PUBLIC_URL`` of
  https or a TLS request) ``__Host-`` prefixed, ``Secure``, ``Path=/``, so no sibling
  subdomain can plant or overwrite it. Over plain http (a loopback bind) a browser
  refuses the prefix, so the cookie is unprefixed with ``Path=/console``.
- **CSRF**: every form carries a token. Signed in, it is an HMAC of the session id
  (which the page's scripts cannot read: the cookie is HttpOnly), so it is bound to the
  session and needs no storage. Before sign-in it is a double-submit token (a random
  value in a ``SameSite=Strict`` cookie and in the form). A post whose ``Origin`` is not
  this page's own, or that the browser marks ``Sec-Fetch-Site: cross-site``, is refused
  before its token is even read.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

SESSION_COOKIE: Final = "cpersona_console"
CSRF_COOKIE: Final = "cpersona_console_csrf"
HOST_PREFIX: Final = "__Host-"
CSRF_FIELD: Final = "csrf"
PREFIX: Final = "/console"

HEADERS: Final = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
}


def is_secure(request: Request, public_url: str) -> bool:
    """Whether the browser reaches the console over https (the cookies' prefix)."""
    return public_url.startswith("https://") or request.url.scheme == "https"


def cookie_name(base: str, secure: bool) -> str:
    return HOST_PREFIX + base if secure else base


def set_cookie(
    response: Response, base: str, value: str, *, secure: bool, max_age: int | None = None
) -> None:
    """Set one of the console's cookies with the attributes of the module docstring."""
    response.set_cookie(
        cookie_name(base, secure),
        value,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=secure,
        path="/" if secure else PREFIX,
    )


def clear_cookie(response: Response, base: str, *, secure: bool) -> None:
    response.delete_cookie(
        cookie_name(base, secure),
        httponly=True,
        samesite="strict",
        secure=secure,
        path="/" if secure else PREFIX,
    )


def session_token(session_id: str) -> str:
    """The CSRF token of a signed-in session: bound to it, derived, never stored."""
    return hmac.new(session_id.encode(), b"console-csrf", hashlib.sha256).hexdigest()


def new_form_token() -> str:
    """A double-submit token for the sign-in form."""
    return secrets.token_urlsafe(32)


def same_token(expected: str, presented: str) -> bool:
    return bool(expected) and hmac.compare_digest(expected.encode(), presented.encode())


def cross_site(request: Request, public_url: str) -> bool:
    """A post another site's page made: the browser says so, or its Origin is neither
    the one the request reached nor CPERSONA_PUBLIC_URL's (behind a TLS proxy)."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        return True
    origin = request.headers.get("origin")
    if origin is None:
        return False  # not a browser, or an old one: the CSRF token still decides
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    public = urlsplit(public_url)
    return origin.rstrip("/") not in {own, f"{public.scheme}://{public.netloc}"}
