"""One record, whole, and what a person may do to it: edit, lock, unlock, delete.

The record page reads through the library (:func:`service.memory.console.get_record`)
after the same read check as the agent pages. Each action is two posts: the first shows
what will happen and asks to confirm, the second (``confirmed=yes``) runs the tool —
``update_memory``, ``lock_memory``, ``unlock_memory``, ``delete_memory`` or
``delete_episode`` — through the dispatcher (:mod:`service.app.console.calls`), with the
record's agent as the tool's ``agent_id`` (its owner check). The tool decides: a key
without read-write, a locked memory, a pause or a row of another agent or tenant gets the
tool's own refusal, shown on the page with ``403`` (``409`` for a lock, ``404`` for a row
the tool did not find). Success and pauses redirect with a fixed notice code, so no
submitted text is ever reflected from the URL.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from service.app.console import render
from service.app.console.auth import Session
from service.app.console.calls import Answer, ToolCalls
from service.mcp import acl, tools
from service.memory import console
from service.memory.library import Library

NOTICES: Final = {
    "updated": "The memory's text was replaced.",
    "locked": "The memory is locked: no edit or deletion until it is unlocked.",
    "unlocked": "The memory is unlocked.",
    "deleted": "The record was deleted.",
    "paused": "Writes are paused (persistence pause): nothing was changed.",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Action:
    """One action of the record page: the tool it runs per record kind and its words."""

    name: str
    verb: str
    tools: dict[str, str]
    done: str


ACTIONS: Final = {
    "edit": Action("edit", "Replace the text", {"mem": "update_memory"}, "updated"),
    "lock": Action("lock", "Lock", {"mem": "lock_memory"}, "locked"),
    "unlock": Action("unlock", "Unlock", {"mem": "unlock_memory"}, "unlocked"),
    "delete": Action(
        "delete", "Delete", {"mem": "delete_memory", "ep": "delete_episode"}, "deleted"
    ),
}


def _arguments(action: Action, kind: str, record_id: int, agent: str, text: str) -> dict[str, Any]:
    id_field = "memory_id" if kind == "mem" else "episode_id"
    arguments: dict[str, Any] = {id_field: record_id, "agent_id": agent}
    if action.name == "edit":
        arguments["content"] = text
    return arguments


def _refusal_status(answer: Answer) -> int:
    message = answer.message.lower()
    if "lock" in message:
        return 409
    if "not found" in message:
        return 404
    return 403


class Curation:
    """The record page and its actions for one application."""

    def __init__(self, lib: Library, calls: ToolCalls) -> None:
        self._lib = lib
        self._calls = calls

    async def record(self, request: Request, session: Session) -> Response:
        """One record, whole: text, source, times, embedding state, lock, its ref."""
        params = request.query_params
        agent, ref = params.get("agent", ""), params.get("ref", "")
        parsed = console.parse_ref(ref)
        if parsed is None or not acl.allows(session.caller.grants, agent, "read"):
            return _not_found(session)
        if not tools.in_tool_set(session.caller.tool_set, "get_contents"):
            return _not_found(session)
        found = await console.get_record(self._lib, session.caller.tenant_id, agent, *parsed)
        if found is None:
            return _not_found(session)
        notice = NOTICES.get(params.get("done", ""), "")
        return render.page("record.html", self._context(session, agent, ref, found, notice))

    def _context(
        self, session: Session, agent: str, ref: str, found: console.RecordDetail, notice: str
    ) -> dict[str, Any]:
        kind = ref.split(":", 1)[0]
        caller = session.caller
        writable = acl.allows(caller.grants, agent, "read-write")
        allowed = [
            action.name
            for action in ACTIONS.values()
            if kind in action.tools and tools.in_tool_set(caller.tool_set, action.tools[kind])
        ]
        return {
            "session": session,
            "page": "agents",
            "agent": agent,
            "ref": ref,
            "kind": kind,
            "record": found,
            "actions": allowed if writable else [],
            "notice": notice,
        }

    async def act(self, request: Request, session: Session) -> Response:
        """POST /console/record/<action>: confirm, then run the action's tool."""
        action = ACTIONS.get(request.path_params["action"])
        form: dict[str, str] = request.state.form
        agent, ref = form.get("agent", ""), form.get("ref", "")
        parsed = console.parse_ref(ref)
        if action is None or parsed is None or parsed[0] not in action.tools:
            return _not_found(session)
        kind, record_id = parsed
        text = form.get("content", "")
        if form.get("confirmed") != "yes":
            return self._confirm(session, action, agent, ref, text)
        arguments = _arguments(action, kind, record_id, agent, text)
        answer = await self._calls.call(session.caller, action.tools[kind], arguments)
        if answer.failed:
            message = f"{action.verb} refused: {answer.message}"
            return render.error_page("Not done", message, _refusal_status(answer), session)
        done = "paused" if answer.paused else action.done
        if action.name == "delete" and not answer.paused:
            return render.redirect(f"/agent?{urlencode({'agent': agent, 'done': done})}")
        return render.redirect(f"/record?{urlencode({'agent': agent, 'ref': ref, 'done': done})}")

    async def edit_form(self, request: Request, session: Session) -> Response:
        """The edit form: the memory's whole text in a text area."""
        params = request.query_params
        agent, ref = params.get("agent", ""), params.get("ref", "")
        parsed = console.parse_ref(ref)
        if (
            parsed is None
            or parsed[0] != "mem"
            or not acl.allows(session.caller.grants, agent, "read")
        ):
            return _not_found(session)
        found = await console.get_record(self._lib, session.caller.tenant_id, agent, *parsed)
        if found is None:
            return _not_found(session)
        context = {"session": session, "page": "agents", "agent": agent, "ref": ref}
        return render.page("edit.html", {**context, "record": found})

    @staticmethod
    def _confirm(session: Session, action: Action, agent: str, ref: str, text: str) -> Response:
        context = {"session": session, "page": "agents", "agent": agent, "ref": ref}
        return render.page("confirm.html", {**context, "action": action, "content": text})


def _not_found(session: Session) -> Response:
    """An unknown ref, another agent's or tenant's row, or an agent the key may not read."""
    return render.error_page("Not found", "This key reads no such record.", 404, session)
