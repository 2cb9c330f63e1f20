"""OAuth 2.1 for the MCP endpoint: the built-in authorization server and external issuers.

``server`` is the built-in authorization server's state (clients, single-use codes,
rotating refresh tokens, access tokens issued from an API key); ``issuer`` verifies the
JWT access tokens of an operator's identity provider. Both resolve a token to the same
:class:`~service.models.Caller` an API key resolves to, so everything behind the edge is
unchanged. Transport (routes, pages, metadata documents) is in ``service.app.oauth``.
"""

from __future__ import annotations


class OAuthRefusal(Exception):
    """An OAuth error response: ``error`` is the RFC 6749 code, ``description`` says why."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}: {description}")
        self.error, self.description = error, description


class TokenRejected(Exception):
    """A presented bearer token that is not valid here (401 ``invalid_token``)."""


class TenantUnknown(Exception):
    """A valid token that names no tenant of this service (403, with this message)."""


class RegistrationsFull(Exception):
    """The overall cap on client registrations per hour is reached (429): no address may
    register until ``retry_after`` seconds have passed."""

    def __init__(self, cap: int, retry_after: float) -> None:
        super().__init__(f"{cap} client registrations within the last hour, from all addresses")
        self.cap, self.retry_after = cap, retry_after
