"""Settings of OAuth 2.1 for the MCP endpoint: the built-in server or an external issuer.

Which mode runs follows from two settings: ``CPERSONA_OAUTH_ISSUER`` set means an
external identity provider issues the tokens; otherwise the built-in authorization
server runs when ``CPERSONA_PUBLIC_URL`` is set (its URLs must be the ones clients
reach) and ``CPERSONA_OAUTH_BUILTIN`` is not false. API keys work in every mode.
"""

from __future__ import annotations

import dataclasses
from typing import Literal
from urllib.parse import urlsplit

from service.config.fields import (
    parse_bool,
    parse_float,
    parse_int,
    parse_origin,
    parse_str,
    setting,
)
from service.config.portability import PortabilitySettings
from service.errors import ConfigError

OAuthMode = Literal["builtin", "external", "off"]


@dataclasses.dataclass(frozen=True)
class OAuthSettings(PortabilitySettings):
    """On top of the portability section, whose CPERSONA_PUBLIC_URL the OAuth URLs use."""

    # -- OAuth
    oauth_builtin: bool = setting(True, "CPERSONA_OAUTH_BUILTIN", parse=parse_bool)
    """Run the built-in authorization server when CPERSONA_PUBLIC_URL is set."""
    oauth_issuer: str = setting("", "CPERSONA_OAUTH_ISSUER", parse=parse_origin)
    """Issuer URL of an external identity provider; set, its JWTs are the OAuth tokens."""
    oauth_audience: str = setting("", "CPERSONA_OAUTH_AUDIENCE", parse=parse_str)
    """The ``aud`` external tokens must carry; '' = the public MCP URL."""
    oauth_tenant_claim: str = setting(
        "cpersona_tenant", "CPERSONA_OAUTH_TENANT_CLAIM", parse=parse_str
    )
    oauth_grants_claim: str = setting(
        "cpersona_grants", "CPERSONA_OAUTH_GRANTS_CLAIM", parse=parse_str
    )
    oauth_tools_claim: str = setting(
        "cpersona_tools", "CPERSONA_OAUTH_TOOLS_CLAIM", parse=parse_str
    )
    """Claim of an external token naming its tool set (``all`` or ``everyday``)."""
    oauth_access_token_seconds: float = setting(
        3600.0, "CPERSONA_OAUTH_ACCESS_TOKEN_SECONDS", parse=parse_float(10, 86_400)
    )
    oauth_refresh_token_days: float = setting(
        30.0, "CPERSONA_OAUTH_REFRESH_TOKEN_DAYS", parse=parse_float(0.01, 3650)
    )
    oauth_jwks_cache_seconds: float = setting(
        300.0, "CPERSONA_OAUTH_JWKS_CACHE_SECONDS", parse=parse_float(0, 86_400)
    )
    oauth_jwks_refetch_seconds: float = setting(
        30.0, "CPERSONA_OAUTH_JWKS_REFETCH_SECONDS", parse=parse_float(0, 3600)
    )
    """Least time between two key-set fetches triggered by an unknown key id."""
    oauth_registrations_per_hour: float = setting(
        20.0, "CPERSONA_OAUTH_REGISTRATIONS_PER_HOUR", parse=parse_float(0, 1_000_000)
    )
    """Client registrations one address may make per hour (and at once) per process; 0 =
    unlimited. ``/register`` takes no credential, so this bounds what a stranger can add."""
    oauth_consent_attempts_per_hour: float = setting(
        30.0, "CPERSONA_OAUTH_CONSENT_ATTEMPTS_PER_HOUR", parse=parse_float(0, 1_000_000)
    )
    """API keys one address, and one key prefix, may try on the consent page per hour (and
    at once) per process; 0 = unlimited. The page checks keys, so this bounds guessing."""
    oauth_registrations_total_per_hour: int = setting(
        1000, "CPERSONA_OAUTH_REGISTRATIONS_TOTAL_PER_HOUR", parse=parse_int(0, 1_000_000)
    )
    """Client registrations from all addresses together in the last hour (counted in the
    database, so across replicas); 0 = unlimited. Rotating addresses cannot pass it."""
    oauth_unused_client_hours: float = setting(
        24.0, "CPERSONA_OAUTH_UNUSED_CLIENT_HOURS", parse=parse_float(0.1, 87_600)
    )
    """A registered client no token was ever issued to is deleted this long after it
    registered, so abandoned and junk registrations do not pile up."""

    @property
    def oauth_mode(self) -> OAuthMode:
        if self.oauth_issuer:
            return "external"
        if self.oauth_builtin and self.oauth_public_base:
            return "builtin"
        return "off"

    @property
    def oauth_public_base(self) -> str:
        """CPERSONA_PUBLIC_URL with scheme and host lower-cased (how clients write it)."""
        if not self.public_url:
            return ""
        parts = urlsplit(self.public_url)
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"

    @property
    def oauth_token_audience(self) -> str:
        """The audience of external tokens: CPERSONA_OAUTH_AUDIENCE or the public MCP URL."""
        if self.oauth_audience:
            return self.oauth_audience
        return f"{self.oauth_public_base}/mcp" if self.oauth_public_base else ""


def check_oauth(settings: OAuthSettings) -> None:
    """External tokens need an audience to be checked against."""
    if settings.oauth_issuer and not settings.oauth_token_audience:
        raise ConfigError(
            "CPERSONA_OAUTH_AUDIENCE: required when CPERSONA_OAUTH_ISSUER is set and "
            "CPERSONA_PUBLIC_URL is not"
        )
