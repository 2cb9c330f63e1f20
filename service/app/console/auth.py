"""Sign-in, sign-out, and the session every other console page runs under.

Sign-in takes a pasted API key (the form is CSRF-checked with a double-submit token),
spends one attempt of the client address and one of the key prefix
(CPERSONA_CONSOLE_SIGN_IN_ATTEMPTS_PER_HOUR; then 429 with ``Retry-After`` before the
key is looked up), and opens a server-side session (:mod:`service.memory.console`).
Each outcome is one log line naming the key by its public KEY_ID, never the secret.
A page of a signed-in person resolves the cookie to the key's caller on every request;
an ended session (signed out, idle, too old, the key revoked or expired) sends the
browser to sign-in with the cookie cleared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import ClassVar, Final

from starlette.requests import Request
from starlette.responses import Response

from service.app.console import forms, render, security
from service.app.oauth import audit
from service.app.oauth.attempts import KeyAttempts
from service.logs import get_logger, throttled
from service.memory import console, operators, tenants, text
from service.memory.library import Library
from service.models import Caller

log = get_logger("service.console")
OPERATOR_MARK: Final = "o~"
"""The cookie of an operator's session starts with this (ids are url-safe base64: no ~)."""


@dataclasses.dataclass(frozen=True)
class Session:
    """A signed-in request: the key's caller, the session's CSRF token, https or not."""

    caller: Caller
    csrf: str
    secure: bool
    kind: ClassVar[str] = "tenant"

    @property
    def read_only(self) -> bool:
        return all(level != "read-write" for level in self.caller.grants.values())


@dataclasses.dataclass(frozen=True)
class OperatorSession:
    """A signed-in operator (no tenant): sees tenants' aggregates only."""

    operator: operators.Operator
    csrf: str
    secure: bool
    kind: ClassVar[str] = "operator"


AnySession = Session | OperatorSession
Page = Callable[[Request, Session], Awaitable[Response]]
OperatorPage = Callable[[Request, OperatorSession], Awaitable[Response]]
AnyPage = Callable[[Request, AnySession], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


class Gate:
    """Sign-in, sign-out and the signed-in wrapper of one application."""

    def __init__(self, lib: Library) -> None:
        self._lib = lib
        settings = lib.settings
        self._public_url = settings.public_url
        self._idle_seconds = settings.console_idle_minutes * 60
        self._lifetime_seconds = settings.console_session_hours * 3600
        self._attempts = KeyAttempts(settings.console_sign_in_attempts_per_hour)

    def secure(self, request: Request) -> bool:
        return security.is_secure(request, self._public_url)

    def _cookie(self, request: Request) -> str:
        name = security.cookie_name(security.SESSION_COOKIE, self.secure(request))
        return request.cookies.get(name, "")

    async def session(self, request: Request) -> AnySession | None:
        """The live session of the request's cookie (a tenant's or an operator's), or None."""
        secure = self.secure(request)
        cookie = self._cookie(request)
        csrf = security.session_token(cookie)
        if cookie.startswith(OPERATOR_MARK):
            found = await operators.session_operator(self._lib.db, cookie[len(OPERATOR_MARK) :])
            return None if found is None else OperatorSession(found, csrf, secure)
        caller = await console.session_caller(self._lib.db, cookie) if cookie else None
        return None if caller is None else Session(caller, csrf, secure)

    def signed_in(self, handler: Page) -> Endpoint:
        """``handler`` for a tenant's signed-in requests only (an operator is sent to the
        operator view); a post must also be same-site and carry the session's CSRF token
        (403 otherwise, before the handler runs)."""

        async def tenant_only(request: Request, session: AnySession) -> Response:
            if isinstance(session, OperatorSession):
                return render.redirect("/tenants")
            return await handler(request, session)

        return self.any_signed_in(tenant_only)

    def operator_in(self, handler: OperatorPage) -> Endpoint:
        """``handler`` for operators only: a tenant's session finds nothing here (404)."""

        async def operator_only(request: Request, session: AnySession) -> Response:
            if not isinstance(session, OperatorSession):
                return render.error_page("Not found", "Nothing here for this key.", 404, session)
            return await handler(request, session)

        return self.any_signed_in(operator_only)

    def any_signed_in(self, handler: AnyPage) -> Endpoint:
        """``handler`` for any signed-in request whose fields can be stored: a query or
        form value Postgres cannot hold (U+0000, a lone surrogate) is a 400 here, as the
        tools refuse it before the library, never an error from the database."""

        async def handle(request: Request) -> Response:
            session = await self.session(request)
            if session is None:
                return self._to_sign_in(request)
            if request.method == "POST":
                refused = await self._refused_post(request, session)
                if refused is not None:
                    return refused
            fields = [*request.query_params.values(), *getattr(request.state, "form", {}).values()]
            problem = next(filter(None, map(text.text_problem, fields)), None)
            if problem is not None:
                return render.error_page("Bad request", problem, 400, session)
            return await handler(request, session)

        return handle

    async def _refused_post(self, request: Request, session: AnySession) -> Response | None:
        if security.cross_site(request, self._public_url):
            return render.error_page("Refused", "This form was not sent by this console.", 403)
        try:
            fields = await forms.form_fields(request, forms.EDIT_BYTES)
        except forms.Unreadable as unreadable:
            return render.error_page("Refused", "The form could not be read.", unreadable.status)
        if not security.same_token(session.csrf, fields.get(security.CSRF_FIELD, "")):
            return render.error_page(
                "Refused", "The form expired or was not sent by this console; try again.", 403
            )
        request.state.form = fields
        return None

    def _to_sign_in(self, request: Request) -> Response:
        response = render.redirect("/sign-in")
        if request.cookies:
            security.clear_cookie(response, security.SESSION_COOKIE, secure=self.secure(request))
        return response

    async def home(self, request: Request) -> Response:
        session = await self.session(request)
        if session is None:
            return render.redirect("/sign-in")
        return render.redirect("/tenants" if isinstance(session, OperatorSession) else "/agents")

    async def sign_in(self, request: Request) -> Response:
        """GET: the form; POST: check the key and open a session."""
        if request.method != "POST":
            return self._form(request)
        if security.cross_site(request, self._public_url):
            return render.error_page("Refused", "This form was not sent by this console.", 403)
        try:
            fields = await forms.form_fields(request)
        except forms.Unreadable as unreadable:
            return render.error_page("Refused", "The form could not be read.", unreadable.status)
        secure = self.secure(request)
        cookie = request.cookies.get(security.cookie_name(security.CSRF_COOKIE, secure), "")
        if not security.same_token(cookie, fields.get(security.CSRF_FIELD, "")):
            return self._form(request, "The form expired; sign in again.", 403)
        pasted = fields.get("api_key", "").strip()
        wait = self._attempts.wait(audit.address(request), pasted)
        if wait:
            return self._throttled(request, pasted, wait)
        caller = await tenants.authenticate(self._lib.db, pasted)
        if caller is not None:
            return await self._open(request, caller, secure)
        operator = await operators.authenticate_operator(self._lib.db, pasted)
        if operator is not None:
            return await self._open(request, operator, secure)
        log.info("console_sign_in_refused", key_id=audit.key_id(pasted), **_where(request))
        message = "That API key is not valid (unknown, revoked or expired)."
        return self._form(request, message, 401)

    async def _open(
        self, request: Request, who: Caller | operators.Operator, secure: bool
    ) -> Response:
        idle, lifetime = self._idle_seconds, self._lifetime_seconds
        db = self._lib.db
        if isinstance(who, operators.Operator):
            opened = await operators.open_session(
                db, who, idle_seconds=idle, lifetime_seconds=lifetime
            )
            session_id, home, tenant = OPERATOR_MARK + opened, "/tenants", "(operator)"
        else:
            session_id = await console.open_session(
                db, who, idle_seconds=idle, lifetime_seconds=lifetime
            )
            home, tenant = "/agents", who.tenant_slug
        log.info("console_signed_in", tenant=tenant, key_id=who.key_id, **_where(request))
        response = render.redirect(home)
        security.set_cookie(
            response,
            security.SESSION_COOKIE,
            session_id,
            secure=secure,
            max_age=int(self._lifetime_seconds),
        )
        security.clear_cookie(response, security.CSRF_COOKIE, secure=secure)
        return response

    async def sign_out(self, request: Request, session: AnySession) -> Response:
        secure = session.secure
        cookie = self._cookie(request)
        if isinstance(session, OperatorSession):
            await operators.close_session(self._lib.db, cookie[len(OPERATOR_MARK) :])
            tenant, key_id = "(operator)", session.operator.key_id
        else:
            await console.close_session(self._lib.db, cookie)
            tenant, key_id = session.caller.tenant_slug, session.caller.key_id
        log.info("console_signed_out", tenant=tenant, key_id=key_id, **_where(request))
        response = render.redirect("/sign-in")
        security.clear_cookie(response, security.SESSION_COOKIE, secure=secure)
        return response

    def _form(self, request: Request, error: str = "", status: int = 200) -> Response:
        secure = self.secure(request)
        name = security.cookie_name(security.CSRF_COOKIE, secure)
        token = request.cookies.get(name) or security.new_form_token()
        headers = {"retry-after": request.state.retry_after} if status == 429 else None
        response = render.page(
            "sign_in.html", {"csrf": token, "error": error}, status=status, headers=headers
        )
        security.set_cookie(response, security.CSRF_COOKIE, token, secure=secure)
        return response

    def _throttled(self, request: Request, pasted: str, wait: int) -> Response:
        """The form again, 429 with Retry-After; one log line per address and interval."""
        suppressed = throttled("console_sign_in_throttled", audit.address(request))
        if suppressed is not None:
            log.warning(
                "console_sign_in_throttled",
                key_id=audit.key_id(pasted),
                suppressed=suppressed,
                **_where(request),
            )
        request.state.retry_after = str(wait)
        return self._form(request, f"Too many attempts; try again in {wait} seconds.", 429)


def _where(request: Request) -> dict[str, str]:
    return {"address": audit.address(request)}
