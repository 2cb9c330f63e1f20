"""The console's pages for a signed-in person: each reads through the library with the
session's caller, shows only agents its key may read (the grants' semantics of
``service.mcp.acl``, as the tools apply them), and is bounded (keyset pages)."""

from __future__ import annotations

import dataclasses

from starlette.requests import Request
from starlette.responses import Response

from service.app.console import render
from service.app.console.auth import Session
from service.app.console.curation import NOTICES
from service.errors import InvalidInput, Refused
from service.mcp import acl, tools
from service.mcp.shaping import excerpt
from service.memory import console
from service.memory.library import Library
from service.memory.recall import pipeline
from service.memory.recall.records import Recalled, RecallResult
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

    async def records(self, request: Request, session: Session) -> Response:
        """An agent's memories or episodes, newest first, a keyset page at a time."""
        params = request.query_params
        agent, tab = params.get("agent", ""), params.get("show", "memories")
        kind = KINDS.get(tab)
        tool = "list_memories" if kind == "mem" else "list_episodes"
        if kind is None or not self._may(session, agent, tool):
            return _no_agent(session)
        try:
            found = await console.list_records(
                self._lib, session.caller.tenant_id, agent, kind, params.get("before", "")
            )
        except InvalidInput as bad:
            return render.error_page("Bad request", bad.message, 400, session)
        context = {"session": session, "page": "agents", "agent": agent, "tab": tab}
        notice = NOTICES.get(params.get("done", ""), "")
        return render.page(
            "records.html", {**context, "found": found, "filters": {}, "notice": notice}
        )

    async def search(self, request: Request, session: Session) -> Response:
        """Recall over an agent's rows with recall's filters: each row with why it
        matched and its excerpt. A person looking is no agent recalling: the search
        credits no recall statistics (as under a persistence pause)."""
        params = request.query_params
        agent = params.get("agent", "")
        if not self._may(session, agent, "recall"):
            return _no_agent(session)
        filters = {name: params.get(name, "") for name in ("q", "channel", "project", "source")}
        request_ = pipeline.RecallRequest(
            agent_id=agent,
            query=filters["q"],
            limit=SEARCH_LIMIT,
            channel=filters["channel"],
            project_id=filters["project"] or None,
            source_id=filters["source"],
            paused=True,
        )
        try:
            result = await pipeline.recall(self._lib, session.caller.tenant_id, request_)
        except Refused as bad:
            return render.error_page("Bad request", bad.message, 400, session)
        context = {"session": session, "page": "agents", "agent": agent, "tab": "search"}
        rows = found_rows(result, filters["q"])
        return render.page("search.html", {**context, "filters": filters, "rows": rows})

    @staticmethod
    def _may(session: Session, agent: str, tool: str) -> bool:
        """Whether the session's key may read ``agent`` and call ``tool`` (its tool set):
        the checks the dispatcher runs before the tool."""
        caller = session.caller
        return (
            bool(agent)
            and acl.allows(caller.grants, agent, "read")
            and tools.in_tool_set(caller.tool_set, tool)
        )


def _no_agent(session: Session) -> Response:
    """What an agent the key may not read answers: the same as one that never existed
    would if its name were unknown to the key (the grants decide, not the rows)."""
    return render.error_page("No such agent", "This key reads no agent of that name.", 404, session)


SEARCH_LIMIT = 20
"""Rows a console search shows (recall's ``limit``)."""
KINDS: dict[str, console.RecordKind] = {"memories": "mem", "episodes": "ep"}


@dataclasses.dataclass(frozen=True, slots=True)
class Found:
    """One recalled row as the search page shows it: why it matched and where."""

    row: Recalled
    preview: str
    more_chars: int
    excerpt: str
    matched: str  # lexical, vector or both
    reason: dict[str, object]


def found_rows(result: RecallResult, query: str) -> list[Found]:
    """The recalled rows with their excerpt (the best passage beyond the preview, as
    recall's own previews get it) and why each matched: ``lexical`` when the query's
    terms occur in it, ``vector`` when its cosine was scored, ``both``."""
    rows = [row for row in result.rows if isinstance(row, Recalled)]
    texts = [row.content for row in rows]
    cuts = excerpt.excerpts(texts, [True] * len(rows), query, console.PREVIEW_CHARS)
    terms = excerpt.terms_of(query)
    out = []
    for row, cut in zip(rows, cuts, strict=True):
        reason = dict(row.match_reason or {})
        lexical = not terms.empty and bool(excerpt.find_hits(row.content, terms))
        vector = "cosine" in reason
        matched = "both" if lexical and vector else "vector" if vector else "lexical"
        preview = row.content[: console.PREVIEW_CHARS]
        more = len(row.content) - len(preview)
        out.append(Found(row, preview, more, cut.text if cut else "", matched, reason))
    return out
