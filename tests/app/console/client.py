"""A person in the console over plain HTTP: a cookie jar, the forms' hidden fields."""

from __future__ import annotations

import re
from html import unescape

import httpx

from tests.support import Served

_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def hidden_fields(html: str) -> dict[str, str]:
    """The hidden fields of the first form of a page that has them (CSRF included)."""
    return {name: unescape(value) for name, value in _HIDDEN.findall(html)}


def csrf_of(html: str) -> str:
    return hidden_fields(html)["csrf"]


class Person:
    """A browser-like client of one console: follows no redirect by itself."""

    def __init__(self, served: Served) -> None:
        self.base = f"{served.base_url}/console"
        self.http = httpx.AsyncClient(timeout=30)

    async def __aenter__(self) -> Person:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def get(self, path: str, **params: str) -> httpx.Response:
        return await self.http.get(self.base + path, params=params)

    async def post(self, path: str, data: dict[str, str], **headers: str) -> httpx.Response:
        return await self.http.post(self.base + path, data=data, headers=headers)

    async def sign_in(self, key: str) -> httpx.Response:
        """Open the sign-in form, paste ``key``; the answer to the post."""
        form = await self.get("/sign-in")
        assert form.status_code == 200, form.text
        return await self.post("/sign-in", {"csrf": csrf_of(form.text), "api_key": key})

    async def signed_in(self, key: str) -> None:
        answer = await self.sign_in(key)
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/console/agents"

    async def page(self, path: str, **params: str) -> httpx.Response:
        """A signed-in page (200 expected)."""
        answer = await self.get(path, **params)
        assert answer.status_code == 200, (answer.status_code, answer.text[:500])
        return answer

    async def submit(self, path: str, data: dict[str, str], csrf_from: str) -> httpx.Response:
        """Post a form of page ``csrf_from`` (its CSRF token) to ``path``."""
        token = csrf_of((await self.page(csrf_from)).text)
        return await self.post(path, {"csrf": token, **data})
