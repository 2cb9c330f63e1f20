"""Redirect URIs: what registration accepts, and the CSP source a URI may add.

Anyone may register a client, so a redirect URI is hostile input until checked. It must
be absolute, ASCII, at most ``MAX_URI_CHARS`` characters of RFC 3986's alphabet, without
``;``, ``,``, whitespace, userinfo or a fragment; https, or http on a loopback address
only, or an app's private scheme (RFC 8252); a host of letters, digits, ``.``, ``-``,
``_`` or an IP literal, and a port of at most 65535. ``;`` and ``,`` are refused because
they separate CSP directives and sources: the consent page names the URI's origin in its
``form-action`` (:func:`csp_source`), which is built from these parsed parts, never
copied, so no URI can add a directive of its own (``frame-ancestors *``).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

MAX_URI_CHARS: Final = 2000
MAX_URIS: Final = 10
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "[::1]"})
FORBIDDEN_SCHEMES: Final = frozenset({"javascript", "data", "file", "vbscript", "blob"})
_ALPHABET = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+=%]*")
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*")
_AUTHORITY = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._\-]+)(?::(?P<port>[0-9]{1,5}))?")


def _authority(netloc: str) -> tuple[str, str] | None:
    """(lower-case host, port or '') of a well-formed authority, else None."""
    match = _AUTHORITY.fullmatch(netloc)
    if match is None:
        return None
    port = match["port"] or ""
    if port and int(port) > 65535:
        return None
    return match["host"].lower(), port


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be a redirect URI, or None when it can."""
    if len(uri) > MAX_URI_CHARS:
        return f"a redirect URI may have at most {MAX_URI_CHARS} characters"
    if not _ALPHABET.fullmatch(uri):
        return f"redirect URI {uri!r} must be ASCII without ';', ',', spaces or control characters"
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri or not _SCHEME.fullmatch(uri.partition(":")[0]):
        return f"redirect URI {uri!r} must be absolute and have no fragment"
    if parts.scheme in FORBIDDEN_SCHEMES:
        return f"redirect URI scheme {parts.scheme!r} is not allowed"
    if "@" in parts.netloc:
        return f"redirect URI {uri!r} must not carry a user name or password"
    authority = _authority(parts.netloc) if parts.netloc else None
    if parts.netloc and authority is None:
        return f"redirect URI {uri!r} has a malformed host or port"
    if parts.scheme in ("http", "https") and authority is None:
        return f"redirect URI {uri!r} has no host"
    if parts.scheme == "http" and authority is not None and authority[0] not in LOOPBACK_HOSTS:
        return f"redirect URI {uri!r}: plain http is allowed only on a loopback address"
    return None


def csp_source(uri: str) -> str | None:
    """The CSP source allowing a navigation to ``uri`` (``scheme://host[:port]``, or
    ``scheme:`` for an app's private scheme), re-serialised from its parsed parts; None
    when ``uri`` is not a valid redirect URI (a client registered before the checks)."""
    if redirect_uri_problem(uri) is not None:
        return None
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return f"{parts.scheme}:"
    authority = _authority(parts.netloc)
    if authority is None:
        return None
    host, port = authority
    return f"{parts.scheme}://{host}{':' + port if port else ''}"
