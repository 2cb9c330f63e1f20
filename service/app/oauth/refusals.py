"""The typed refusals of the OAuth code: what ``server`` and ``issuer`` raise.

``server`` is the built-in authorization server's state (clients, single-use codes,
rotating refresh tokens, access tokens issued from an API key, in Postgres through
``service.db.oauth``); ``issuer`` verifies the JWT access tokens of an operator's
identity provider. Both resolve a token to the same :class:`~service.models.Caller` an
API key resolves to, so everything behind the edge is unchanged. The routes, pages and
metadata documents beside them render these refusals as OAuth error responses.
"""

from __future__ import annotations

import dataclasses
import uuid


class OAuthRefusal(Exception):
    """An OAuth error response: ``error`` is the RFC 6749 code, ``description`` says why."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}: {description}")
        self.error, self.description = error, description


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayedGrant:
    """Whose grant a replay revoked: for the audit line (no secret in it)."""

    grant: str
    tenant_id: uuid.UUID
    client_id: str
    key_prefix: str


class GrantReplayed(OAuthRefusal):
    """A used authorization code or a rotated refresh token was presented again: the
    whole family of tokens issued from that grant was revoked (``tokens_revoked``).
    Answered ``invalid_grant`` like any dead grant; the boundary logs ``replayed``."""

    def __init__(self, replayed: ReplayedGrant, tokens_revoked: int) -> None:
        what = replayed.grant.replace("_", " ")
        super().__init__("invalid_grant", f"the {what} was already used; its tokens are revoked")
        self.replayed, self.tokens_revoked = replayed, tokens_revoked


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
