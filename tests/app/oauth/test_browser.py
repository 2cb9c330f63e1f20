"""A person authorizes a connector in a real browser: headless Chromium on the consent page.

The SDK's OAuth client hands the authorization URL to the "browser" as a desktop
client would; Chromium loads the consent page, a wrong key is refused on the page,
the right key is pasted and approved, and Chromium follows the redirect to the
client's redirect URI, where the code is read (nobody listens there: the navigation
request is enough). The page's CSP has to allow that redirect, or Chromium blocks it.
"""

from __future__ import annotations

import asyncio

from mcp.client.auth import AuthorizationCodeResult

from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.browser import Browser
from tests.app.oauth.flows import CALLBACK, OAuthSession, code_from_redirect
from tests.support import Agent, new_tenant, serve


class ChromiumConsent:
    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.result: AuthorizationCodeResult | None = None
        self.seen: list[str] = []

    def _fill_in(self, authorization_url: str) -> None:
        with Browser() as browser:
            browser.open(authorization_url)
            self.seen.append(str(browser.evaluate("document.title")))
            browser.evaluate("document.getElementById('api_key').value = 'cpk_not_a_real_key'")
            browser.evaluate("document.getElementById('approve').click()")
            browser.event("Page.loadEventFired")
            self.seen.append(str(browser.evaluate("document.querySelector('.error').innerText")))
            browser.evaluate(f"document.getElementById('api_key').value = {self.api_key!r}")
            browser.evaluate("document.getElementById('approve').click()")
            self.result = code_from_redirect(browser.wait_for_request(CALLBACK))

    async def open(self, authorization_url: str) -> None:
        await asyncio.wait_for(asyncio.to_thread(self._fill_in, authorization_url), 60)

    async def code(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


async def test_a_person_authorizes_a_connector_in_headless_chromium_and_it_recalls(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "browser")
    async with serve(settings, database_url, public=True) as served:
        await Agent(served, key).call(
            "store", agent_id="a", message={"content": "the lighthouse keeper feeds the cat"}
        )
        consent = ChromiumConsent(key)
        session = OAuthSession(served, consent.open, consent.code)
        found = await session.call("recall", agent_id="a", query="lighthouse keeper", deep=True)
    assert consent.seen == [
        "Connect pytest connector to CPersona memory",
        "That API key is not valid (unknown, revoked or expired).",
    ]
    assert [m["content"] for m in found["messages"]] == ["the lighthouse keeper feeds the cat"]
    assert consent.result is not None
    assert consent.result.iss == served.base_url
