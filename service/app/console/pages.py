"""The console's pages for a signed-in person: each reads through the library with the
session's caller, shows only agents its key may read (the grants' semantics of
``service.mcp.acl``, as the tools apply them), and is bounded (keyset pages)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from service.app.console import render
from service.app.console.auth import Session
from service.errors import InvalidInput
from service.mcp import acl
from service.memory import console
from service.memory.library import Library
from service.models import Caller


def readable(caller: Caller) -> console.Readable:
    """The agents ``caller`` may read, as the library's filter: the ``*`` grant decides
    for every agent the key does not name; a named agent's own grant wins."""
    named = {agent: level for agent, level in caller.grants.items() if agent != acl.SWEEP}
    return console.Readable(
        by_default=acl.allows({acl.SWEEP: caller.grants.get(acl.SWEEP, "none")}, "any", "read"),
        hidden=tuple(agent for agent, level in named.items() if level == "none"),
        granted=tuple(agent for agent, level in named.items() if level != "none"),
    )


class Pages:
    """The signed-in pages of one application."""

    def __init__(self, lib: Library) -> None:
        self._lib = lib

    async def agents(self, request: Request, session: Session) -> Response:
        """The agents the key may read, with their counts, a page at a time by name."""
        after = request.query_params.get("after", "")
        try:
            found = await console.list_agents(
                self._lib, session.caller.tenant_id, readable(session.caller), after
            )
        except InvalidInput as bad:
            return render.error_page("Bad request", bad.message, 400, session)
        context = {"session": session, "page": "agents", "agents": found.agents}
        return render.page("agents.html", {**context, "next_after": found.next_after})
