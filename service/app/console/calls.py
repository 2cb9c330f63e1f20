"""The console's writes run as tool calls: the same dispatcher, checks and handlers as
``tools/call`` on ``/mcp``, so an edit, a lock or a delete from a browser honours the key's
tool set, grants, the operating context's gate, the persistence pause and locks exactly as
an agent's call does, and is recorded in usage and in the log like one.

Each call opens the request context the edge opens for ``/mcp`` (the caller of the
session, a request id), runs :class:`service.mcp.server.Dispatcher`, and reads the tool's
JSON answer back. Usage is added to the process's meter (flushed with the rest), with the
answer's size as the bytes sent.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any

import mcp_types as types

from service.app.edge import FAILED_OUTCOMES
from service.logs import get_logger
from service.mcp import request as mcp_request, tools
from service.mcp.server import Dispatcher
from service.memory.library import Library
from service.memory.usage import UsageCounter
from service.models import Caller, JsonObject

log = get_logger("service.console")


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """A tool's answer: ``body`` its JSON object (``{"error": text}`` for a plain-text
    refusal), ``outcome`` as the usage meter counts it."""

    body: JsonObject
    outcome: str

    @property
    def failed(self) -> bool:
        return self.outcome in FAILED_OUTCOMES

    @property
    def paused(self) -> bool:
        """A write the persistence pause skipped (the tool's ``persisted: false``)."""
        return self.outcome == "paused" or self.body.get("persisted") is False

    @property
    def message(self) -> str:
        """What went wrong, in the tool's words ('' when nothing did)."""
        for field in ("error", "reason", "message"):
            value = self.body.get(field)
            if isinstance(value, str) and value:
                return value
        return "the tool refused the change" if self.failed else ""


class ToolCalls:
    """Runs tools for console sessions through the MCP dispatcher."""

    def __init__(self, lib: Library, usage: UsageCounter | None) -> None:
        self._dispatcher = Dispatcher(lib, tools.all_tools(), mcp_request.current_caller)
        self._usage = usage

    async def call(self, caller: Caller, tool: str, arguments: dict[str, Any]) -> Answer:
        info = mcp_request.RequestInfo(request_id=uuid.uuid4().hex[:16], caller=caller)
        token = mcp_request.current_request.set(info)
        try:
            result = await self._dispatcher.call(tool, arguments)
        finally:
            mcp_request.current_request.reset(token)
        text = _text(result)
        answer = Answer(_body(text), info.outcome or "ok")
        self._account(caller, tool, info, answer, len(text.encode()))
        log.info(
            "console_tool",
            request_id=info.request_id,
            tenant=caller.tenant_slug,
            key_id=caller.key_id,
            tool=tool,
            outcome=answer.outcome,
        )
        return answer

    def _account(
        self,
        caller: Caller,
        tool: str,
        info: mcp_request.RequestInfo,
        answer: Answer,
        sent: int,
    ) -> None:
        if self._usage is None:
            return
        self._usage.add(
            caller.tenant_id,
            tool,
            failed=answer.failed,
            bytes_out=sent,
            chars_returned=info.chars_returned,
            chars_saved=info.chars_saved,
            tokens_delivered=info.tokens_delivered,
            tokens_saved=info.tokens_saved or {},
        )


def _text(result: types.CallToolResult) -> str:
    item = result.content[0] if result.content else None
    return item.text if isinstance(item, types.TextContent) else ""


def _body(text: str) -> JsonObject:
    try:
        body = json.loads(text)
    except ValueError:
        return {"error": text}
    return body if isinstance(body, dict) else {"error": text}
