"""The audit lines of the built-in authorization server (logger ``service.oauth``).

One line per registration (and refused registration), per refused token or revocation
request, per wrong API key pasted on the consent page, and a warning per replayed code
or refresh token (its family revoked). Never a secret: no code, token, client secret or
API key is logged; a pasted key is named by its public KEY_ID prefix, and only when it
has the shape of a key (anything else a person pastes may be a password). Values a
client chooses are cut to ``MAX_FIELD_CHARS``. The address is the connection's peer
(the proxy's ``X-Forwarded-For`` where uvicorn trusts it).
"""

from __future__ import annotations

import re
from typing import Final

from starlette.requests import Request

from service.app.oauth.refusals import GrantReplayed, OAuthRefusal
from service.logs import get_logger
from service.memory import tenants

log = get_logger("service.oauth")
MAX_FIELD_CHARS: Final = 100
_KEY_ID = re.compile(rf"{tenants.KEY_SCHEME}_[0-9a-f]{{12}}")


def address(request: Request) -> str:
    """The client address of ``request`` ('' when the server does not know it)."""
    return request.client.host if request.client else ""


def key_id(pasted: str) -> str:
    """The public KEY_ID of a pasted API key, '' when it does not look like a key."""
    prefix = pasted[: tenants.PREFIX_LENGTH]
    following = pasted[tenants.PREFIX_LENGTH : tenants.PREFIX_LENGTH + 1]
    return prefix if _KEY_ID.fullmatch(prefix) and following in ("", "_") else ""


def token_refused(request: Request, refused: OAuthRefusal, form: dict[str, str]) -> None:
    """A refused ``/token`` or ``/revoke`` request; a replay is a warning naming the
    grant whose tokens were revoked."""
    fields = {
        "path": request.url.path,
        "error": refused.error,
        "grant_type": form.get("grant_type", "")[:MAX_FIELD_CHARS],
        "client_id": form.get("client_id", "")[:MAX_FIELD_CHARS],
        "address": address(request),
    }
    if isinstance(refused, GrantReplayed):
        replayed = refused.replayed
        log.warning(
            "oauth_grant_replayed",
            **{**fields, "client_id": replayed.client_id},
            grant=replayed.grant,
            tenant_id=str(replayed.tenant_id),
            key_id=replayed.key_prefix,
            tokens_revoked=refused.tokens_revoked,
        )
        return
    log.info("oauth_token_refused", **fields, description=refused.description[:200])


def registered(request: Request, client_id: str, document: dict[str, object]) -> None:
    uris = document.get("redirect_uris")
    log.info(
        "oauth_client_registered",
        client_id=client_id,
        client_name=str(document.get("client_name", ""))[:MAX_FIELD_CHARS],
        redirect_uris=[str(uri)[:200] for uri in uris] if isinstance(uris, list) else [],
        auth_method=str(document.get("token_endpoint_auth_method", "")),
        address=address(request),
    )


def registration_refused(request: Request, reason: str) -> None:
    log.info("oauth_registration_refused", reason=reason[:200], address=address(request))


def consent_refused(request: Request, client_id: str, pasted: str) -> None:
    """A key pasted on the consent page that authenticates nobody."""
    log.info(
        "oauth_consent_refused",
        client_id=client_id,
        key_id=key_id(pasted),
        address=address(request),
    )


def consent_throttled(request: Request, client_id: str, pasted: str, suppressed: int) -> None:
    log.warning(
        "oauth_consent_throttled",
        client_id=client_id,
        key_id=key_id(pasted),
        address=address(request),
        suppressed=suppressed,
    )
