"""The MCP server: registers tools, validates arguments, authorises, dispatches.

Built with the SDK's low-level ``Server`` so the three failure layers
(docs/tools.md, "Answers and failures") are exact: a schema violation is an ``isError`` result whose
text is ``Input validation error: <message>``; an unknown tool is the bare
``{"error": "Unknown tool: <name>"}`` (flagged ``isError`` so clients that branch on it
see a failure); a handler's semantic failure is its own
``{"ok": false, ...}`` object. Unexpected exceptions are logged and answered with
a generic bare error carrying the request id, never a stack trace. A temporary
unavailability (database down or busy) is none of these: it becomes a JSON-RPC
error answered with 503 and Retry-After (:mod:`service.mcp.refusals`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from pydantic import BaseModel

from service import __version__
from service.errors import Refused, ServiceError, Unavailable
from service.logs import get_logger
from service.mcp import checks, instructions, pausing, refusals, request, tools
from service.mcp.registry import ToolEnv, ToolSpec
from service.mcp.shaping import accounting, tokens
from service.memory import pauses, reads
from service.memory.library import Library
from service.memory.operating_context import storage
from service.models import Caller, JsonObject

log = get_logger(__name__)
CATALOGUE_TTL_MS = 300_000
"""How long a client may cache tools/list (5 minutes): it changes only with a deployment."""
INSTRUCTED_METHODS = frozenset({"initialize", "server/discover"})


ALWAYS_LOAD_META: JsonObject = {"anthropic/alwaysLoad": True}
"""The ``_meta`` of a tool declared ``always_load``: Claude Code then loads its definition at
session start instead of deferring it; other clients ignore the key."""


def _annotations(spec: ToolSpec[Any]) -> types.ToolAnnotations:
    """CPersona 2.6's hints exactly (docs/tools.md, "The catalogue an agent sees"): a read-only
    tool sends ``readOnlyHint`` alone; a tool that writes sends ``readOnlyHint: false`` and
    the destructive and idempotent hints it declares (None: not sent)."""
    if spec.read_only:
        return types.ToolAnnotations(read_only_hint=True)
    return types.ToolAnnotations(
        read_only_hint=False, destructive_hint=spec.destructive, idempotent_hint=spec.idempotent
    )


def tool_definition(spec: ToolSpec[Any]) -> types.Tool:
    """The catalogue entry of ``spec``; the description's source line breaks become spaces
    (they only wrap the source text, and every character is in each session's context)."""
    return types.Tool(
        name=spec.name,
        description=" ".join(spec.description.split()),
        input_schema=spec.input_schema,
        annotations=_annotations(spec),
        _meta=dict(ALWAYS_LOAD_META) if spec.always_load else None,
    )


def _text_result(body: JsonObject | str, *, is_error: bool = False) -> types.CallToolResult:
    payload = body if isinstance(body, str) else tokens.render(body)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=payload)], is_error=is_error
    )


class Dispatcher:
    """Runs one tool call for the current caller: the checks in order
    (:mod:`service.mcp.checks`), then the handler."""

    def __init__(
        self,
        lib: Library,
        specs: Sequence[ToolSpec[Any]],
        resolve_caller: Callable[[], Caller],
    ) -> None:
        self._lib = lib
        self._specs = {spec.name: spec for spec in specs}
        self._checks = checks.chain(tuple(specs), lib.settings.max_axis_length)
        self._resolve_caller = resolve_caller

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        spec = self._specs.get(name)
        if spec is None:
            request.note_tool(name[:100], "unknown_tool")
            return _text_result({"error": f"Unknown tool: {name}"}, is_error=True)
        session_key = session_key_of(spec, arguments) or request.current_session_key()
        env = ToolEnv(self._lib, self._resolve_caller(), session_key)
        call = checks.Call(spec, env, dict(arguments or {}))
        try:
            answer = await self._run(call)
        except Unavailable as exc:  # a JSON-RPC error with 503, by refusals.UnavailableAsError
            request.note_tool(name, exc.reason)
            raise
        if isinstance(answer, checks.Refusal) and answer.outcome is not None:
            request.note_tool(name, answer.outcome)
            return _text_result(answer.answer, is_error=answer.is_error)
        body = answer.answer if isinstance(answer, checks.Refusal) else answer
        assert isinstance(body, dict)  # only schema refusals are plain text, with an outcome
        body = _with_refusal_fields(spec, call.args, body)
        request.note_tool(name, _outcome(body))
        result = _text_result(body)
        self._account(body, result)
        return result

    def _account(self, body: JsonObject, result: types.CallToolResult) -> None:
        """Characters and tokens for the usage meter; the tools that budget tokens note
        their own savings, the others' previews are estimated from the characters."""
        returned, saved = accounting.char_accounting(body)
        request.note_chars(returned, saved)
        item = result.content[0]
        text = item.text if isinstance(item, types.TextContent) else ""
        request.note_tokens(tokens.token_counter(self._lib.settings.tokenizer)(text))
        if request.noted_savings() is None:
            request.note_savings(previews=tokens.tokens_of_chars(saved))

    async def _run(self, call: checks.Call) -> JsonObject | checks.Refusal:
        """The checks that need no database, then the rest where the call is routed."""
        for position, check in enumerate(self._checks):
            if check.reads_database:
                return await self._routed(call, self._checks[position:])
            refusal = await check(call)
            if refusal is not None:
                return refusal
        return await self._handled(call)

    async def _routed(
        self, call: checks.Call, remaining: Sequence[checks.Check]
    ) -> JsonObject | checks.Refusal:
        """A read-only call on the read replica when there is one (``reads.on_replica``
        falls back to the primary); everything else on the primary."""
        if not call.spec.reads_replica(self._lib.settings):
            return await self._guarded(call, remaining)

        def on(lib: Library) -> Awaitable[JsonObject | checks.Refusal]:
            call.env = dataclasses.replace(call.env, lib=lib)
            return self._guarded(call, remaining)

        return await reads.on_replica(self._lib, on)

    async def _guarded(
        self, call: checks.Call, remaining: Sequence[checks.Check]
    ) -> JsonObject | checks.Refusal:
        """The checks that read the database and the handler, with the library's typed
        errors answered: a refusal in the tool's shape, a bare dispatch error, a logged
        internal error; an unavailable database propagates (503)."""
        spec = call.spec
        try:
            for check in remaining:
                refusal = await check(call)
                if refusal is not None:
                    return refusal
            return await self._handled(call)
        except Unavailable:
            raise
        except Refused as exc:  # the tool's own failure shape
            return {**spec.refusal(exc.message), **exc.details}
        except ServiceError as exc:  # CPersona's dispatch-level bare error
            return {"error": exc.message}
        except Exception:
            info = request.current_request.get()
            request_id = info.request_id if info else "-"
            log.exception("tool_failed", tool=spec.name)
            return {"error": f"internal error while running {spec.name} (request {request_id})"}

    @staticmethod
    async def _handled(call: checks.Call) -> JsonObject:
        if call.spec.places_notes:
            call.env = dataclasses.replace(call.env, notes=call.notes)
            return await pausing.run(call.spec, call.env, call.params)
        body = await pausing.run(call.spec, call.env, call.params)
        return {**body, **call.notes} if call.notes else body


def session_key_of(spec: ToolSpec[Any], arguments: dict[str, Any] | None) -> str:
    """The session a call names in a ``session_key`` argument its schema does not declare
    (CPersona 2.6 clients send one on every tool), or ``""``: it counts as the
    ``X-CPersona-Session`` header does, picking the session's pause and ledger, never the
    data (docs/tools.md, "Differences from CPersona"). The pause tools declare it as the
    scope they act on, so it is theirs alone. A key no pause could have been set with
    (``pauses.valid_session_key``) names no session."""
    value = (arguments or {}).get("session_key")
    if "session_key" in spec.input_schema.get("properties", {}) or not isinstance(value, str):
        return ""
    return value if pauses.valid_session_key(value) else ""


def _failed(body: JsonObject) -> bool:
    return "error" in body or body.get("ok") is False


def _with_refusal_fields(spec: ToolSpec[Any], args: JsonObject, body: JsonObject) -> JsonObject:
    """A refusal with the fields the tool's refusals always carry
    (``ToolSpec.refusal_fields``), each after the refusal's own and only where it did not
    set it: a denial, a gate refusal and the tool's own refusal then share one shape."""
    if spec.refusal_fields is None or not _failed(body):
        return body
    extra = {key: value for key, value in spec.refusal_fields(args).items() if key not in body}
    return {**body, **extra} if extra else body


def _outcome(body: JsonObject) -> str:
    if _failed(body):
        return "failed"
    if body.get("persisted") is False:  # a write skipped under a persistence pause
        return "paused"
    result = body.get("result")
    return str(result) if isinstance(result, str) else "ok"


def build_mcp_server(
    lib: Library, resolve_caller: Callable[[], Caller] = request.current_caller
) -> Server[Any]:
    """The low-level MCP server with every implemented tool registered."""
    specs = tools.all_tools()
    dispatcher = Dispatcher(lib, specs, resolve_caller)
    definitions = [tool_definition(spec) for spec in specs]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool_set = resolve_caller().tool_set
        listed = [tool for tool in definitions if tools.in_tool_set(tool_set, tool.name)]
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await dispatcher.call(params.name, params.arguments)

    server: Server[Any] = Server(
        "cpersona-service",
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=lambda name: dispatcher_schema(specs, name),
        # the catalogue changes only with a deployment; private: a key may see its own set
        cache_hints={"tools/list": CacheHint(ttl_ms=CATALOGUE_TTL_MS, scope="private")},
    )
    server.middleware.append(refusals.UnavailableAsError())  # outside TenantInstructions
    server.middleware.append(TenantInstructions(lib, resolve_caller))
    return server


class TenantInstructions:
    """Serve the service's paragraph and the caller's tenant operating-context summary as
    ``instructions`` (:func:`service.mcp.instructions.compose`).

    One server serves every tenant, so the instructions cannot be fixed at
    construction: this middleware fills them into each ``initialize`` answer
    (the handshake era) and each ``server/discover`` answer (the 2026-07-28
    revision) from the tenant of the request's credential (the paragraph alone when
    the tenant set no summary).
    """

    def __init__(self, lib: Library, resolve_caller: Callable[[], Caller]) -> None:
        self._lib = lib
        self._resolve_caller = resolve_caller

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method not in INSTRUCTED_METHODS:
            return result
        summary = await storage.instructions_for(self._lib, self._resolve_caller().tenant_id)
        text = instructions.compose(summary)
        if isinstance(result, BaseModel):
            return result.model_copy(update={"instructions": text})
        return {**result, "instructions": text}


def dispatcher_schema(specs: Sequence[ToolSpec[Any]], name: str) -> JsonObject | None:
    for spec in specs:
        if spec.name == name:
            return spec.input_schema
    return None
