"""Redirect URIs of the built-in server: never an open redirector, never a CSP injection.

Anyone may register a client (RFC 7591), so a registered redirect URI proves nothing:
``/authorize`` sends a browser back to it only after the request checked out and the
person acted on the consent page; every other error is shown on this server's own page
(RFC 9700 section 4.11). Registration refuses redirect URIs with userinfo, ``;``, ``,``,
whitespace or a bad port, and the consent page's ``form-action`` is built from the
parsed, re-serialised origin, so a URI can never add a directive of its own.
"""

from __future__ import annotations

import httpx

from service.app.oauth import consent, server
from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.flows import authorize_query, pkce, register
from tests.support import new_tenant, serve

EVIL = "https://evil.example/cb"
HOSTILE = [
    "https://a.example;frame-ancestors */cb",
    "https://user:pw@a.example/cb",
    "https://a.example,b.example/cb",
    "https://a.example/c b",
    "https://a.example/cb\t",
    "https://a.example:99999/cb",
    "https://a.example:x/cb",
    "https://a.exa'mple/cb",
    "my app://cb",
    "https:///cb",
    "https://a.example/" + "x" * 2100,
]


async def test_authorize_errors_are_shown_on_our_page_not_redirected_to_the_client(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served, redirect_uris=[EVIL]))["client_id"]
        _, challenge = pkce()
        query = {**authorize_query(served, client_id, challenge), "redirect_uri": EVIL}
        url = f"{served.base_url}/authorize"
        answers = [
            await http.get(url, params={**query, **change})
            for change in (
                {"response_type": "token"},
                {"code_challenge_method": "plain"},
                {"resource": "https://elsewhere.example/mcp"},
            )
        ]
    for answer, error in zip(
        answers, ("unsupported_response_type", "invalid_request", "invalid_target"), strict=True
    ):
        assert answer.status_code == 400, answer.text
        assert "location" not in answer.headers
        assert answer.headers["content-type"].startswith("text/html")
        assert error in answer.text
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        # the person may choose to go back to the application, by following a link
        assert f'href="{EVIL}?error={error}' in answer.text


async def test_registration_refuses_redirect_uris_that_are_not_strictly_well_formed(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        url = f"{served.base_url}/register"
        answers = [await http.post(url, json={"redirect_uris": [uri]}) for uri in HOSTILE]
        many = await http.post(url, json={"redirect_uris": [EVIL + str(n) for n in range(11)]})
        fine = await http.post(
            url,
            json={"redirect_uris": ["https://A.example:8443/cb?x=1", "cursor://anysphere/oauth"]},
        )
    refused = [(a.status_code, a.json()["error"]) for a in [*answers, many]]
    assert refused == [(400, "invalid_client_metadata")] * (len(HOSTILE) + 1)
    assert fine.status_code == 201, fine.text


async def test_a_client_stored_before_the_check_gets_no_consent_page_and_no_csp_of_its_own(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "legacy")
    hostile = "https://a.example;frame-ancestors */cb"
    client_id, _ = await server.register_client(
        lib.db,
        {"redirect_uris": [hostile], "grant_types": ["authorization_code"]},
        confidential=False,
    )
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        _, challenge = pkce()
        query = {**authorize_query(served, client_id, challenge), "redirect_uri": hostile}
        page = await http.get(f"{served.base_url}/authorize", params=query)
    assert page.status_code == 400
    assert "location" not in page.headers
    assert "redirect URI" in page.text
    assert page.headers["content-security-policy"].count("frame-ancestors") == 1


def test_the_consent_pages_form_action_is_the_parsed_origin_or_nothing() -> None:
    def form_action(uri: str) -> str:
        csp = consent.safe_headers(uri)["content-security-policy"]
        assert csp.count("frame-ancestors") == 1
        assert csp.count(";") == 4
        return next(part for part in csp.split("; ") if part.startswith("form-action"))

    assert (
        form_action("https://A.Example:8443/cb?x=1") == "form-action 'self' https://a.example:8443"
    )
    assert form_action("http://127.0.0.1:9/cb") == "form-action 'self' http://127.0.0.1:9"
    assert form_action("http://[::1]:9/cb") == "form-action 'self' http://[::1]:9"
    assert form_action("cursor://anysphere/oauth") == "form-action 'self' cursor:"
    for hostile in HOSTILE[:-1]:
        assert form_action(hostile) == "form-action 'self'", hostile
