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

import copy
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import jsonschema
import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from pydantic import BaseModel

from service import __version__
from service.errors import Refused, ServiceError, Unavailable
from service.logs import get_logger
from service.mcp import acl, pausing, project_gate, refusals, request, tools
from service.mcp.registry import ToolEnv, ToolSpec
from service.mcp.shaping import accounting, tokens
from service.memory import bounds, reads, text
from service.memory.library import Library
from service.memory.operating_context import storage
from service.models import Caller, JsonObject

log = get_logger(__name__)
CATALOGUE_TTL_MS = 300_000
"""How long a client may cache tools/list (5 minutes): it changes only with a deployment."""
INSTRUCTED_METHODS = frozenset({"initialize", "server/discover"})


def _annotations(spec: ToolSpec) -> types.ToolAnnotations:
    """The hints, each sent only where it differs from the MCP default (read-only false,
    destructive true, idempotent false): a read-only tool needs no destructive hint."""
    if spec.read_only:
        return types.ToolAnnotations(read_only_hint=True)
    return types.ToolAnnotations(destructive_hint=spec.destructive, idempotent_hint=spec.idempotent)


def tool_definition(spec: ToolSpec) -> types.Tool:
    """The catalogue entry of ``spec``; the description's source line breaks become spaces
    (they only wrap the source text, and every character is in each session's context)."""
    return types.Tool(
        name=spec.name,
        description=" ".join(spec.description.split()),
        input_schema=spec.input_schema,
        annotations=_annotations(spec),
    )


def _text_result(body: JsonObject, *, is_error: bool = False) -> types.CallToolResult:
    payload = tokens.render(body)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=payload)], is_error=is_error
    )


def _validation_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Input validation error: {message}")],
        is_error=True,
    )


MAX_SCHEMA_MESSAGE_CHARS = 500


def _schema_message(error: jsonschema.ValidationError) -> str:
    """jsonschema's message for ``error``, short: its own quotes the offending value whole
    (a 600 KB query came back in the answer), so a too-long string or list is named by its
    path with its length and cap (the library's wording, ``bounds.too_long``), and any
    other message is cut at ``MAX_SCHEMA_MESSAGE_CHARS``."""
    if error.validator in ("maxLength", "maxItems") and isinstance(error.instance, str | list):
        where = "/".join(str(part) for part in error.absolute_path) or "arguments"
        unit = "characters" if error.validator == "maxLength" else "items"
        cap = error.validator_value
        return bounds.too_long(where, len(error.instance), cap if isinstance(cap, int) else 0, unit)
    message = error.message
    if len(message) > MAX_SCHEMA_MESSAGE_CHARS:
        return message[:MAX_SCHEMA_MESSAGE_CHARS] + "…"
    return message


def _denial(spec: ToolSpec, caller: Caller, args: JsonObject) -> JsonObject | None:
    for agent, required in spec.demands(args):
        if not acl.allows(caller.grants, agent, required):
            return acl.denial(caller, agent, required, {"tool": spec.name})
    return None


def with_defaults(schema: JsonObject, args: JsonObject) -> JsonObject:
    """``args`` with every omitted top-level property that declares a ``default`` set to
    (a copy of) it: the schema is the one place a default is written, and handlers read
    ``args[name]``. Properties without a default stay absent (``project_id`` omitted
    means "every project", which no default can say)."""
    properties = schema.get("properties", {})
    defaults = {
        name: copy.deepcopy(prop["default"])
        for name, prop in properties.items()
        if "default" in prop and name not in args
    }
    return {**args, **defaults}


def without_null_defaults(schema: JsonObject, args: JsonObject) -> JsonObject:
    """``args`` without the top-level nulls of properties that declare a default: a null
    there means "not given" (archive_episode's ``resolved: null`` is false;
    docs/tools.md, "The catalogue an agent sees"), so the schemas stay single-typed (no
    ``["boolean", "null"]`` unions that strict validators flag) and clients that send null keep
    working."""
    properties = schema.get("properties", {})
    return {
        name: value
        for name, value in args.items()
        if not (value is None and "default" in properties.get(name, {}))
    }


def _outside_tool_set(name: str, caller: Caller) -> JsonObject:
    """The refusal of a listed-elsewhere tool: a key sees and calls only its tool set."""
    return {
        "error": f"{name} is not in this key's tool set ({caller.tool_set}); "
        "ask the operator for a key created with --tools all",
        "tool": name,
        "tool_set": caller.tool_set,
    }


class Dispatcher:
    """Validates and runs one tool call for the current caller."""

    def __init__(
        self, lib: Library, specs: Sequence[ToolSpec], resolve_caller: Callable[[], Caller]
    ) -> None:
        self._lib = lib
        self._specs = {spec.name: spec for spec in specs}
        self._validators = {
            spec.name: jsonschema.Draft202012Validator(spec.input_schema) for spec in specs
        }
        self._resolve_caller = resolve_caller

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        spec = self._specs.get(name)
        if spec is None:
            request.note_tool(name[:100], "unknown_tool")
            return _text_result({"error": f"Unknown tool: {name}"}, is_error=True)
        caller = self._resolve_caller()
        if not tools.in_tool_set(caller.tool_set, name):
            request.note_tool(name, "not_in_tool_set")
            return _text_result(_outside_tool_set(name, caller), is_error=True)
        args = without_null_defaults(spec.input_schema, dict(arguments or {}))
        error = jsonschema.exceptions.best_match(self._validators[name].iter_errors(args))
        if error is not None:
            request.note_tool(name, "invalid_input")
            return _validation_error(_schema_message(error))
        try:
            body = await self._run(spec, with_defaults(spec.input_schema, args))
        except Unavailable as exc:  # a JSON-RPC error with 503, by refusals.UnavailableAsError
            request.note_tool(name, exc.reason)
            raise
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

    async def _run(self, spec: ToolSpec, args: JsonObject) -> JsonObject:
        caller = self._resolve_caller()
        problem = text.text_problem(args) or _axis_problem(args, self._lib.settings.max_axis_length)
        if problem:
            return spec.refusal(problem)
        denial = _denial(spec, caller, args)
        if denial is not None:
            return denial
        env = ToolEnv(self._lib, caller, request.current_session_key())
        try:
            return await self._routed(spec, env, args)
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

    async def _routed(self, spec: ToolSpec, env: ToolEnv, args: JsonObject) -> JsonObject:
        """A read-only call on the read replica when there is one (``reads.on_replica``
        falls back to the primary); everything else on the primary."""
        if not spec.reads_replica(self._lib.settings):
            return await self._gated(spec, env, args)

        def gated(lib: Library) -> Awaitable[JsonObject]:
            return self._gated(spec, dataclasses.replace(env, lib=lib), args)

        return await reads.on_replica(self._lib, gated)

    async def _gated(self, spec: ToolSpec, env: ToolEnv, args: JsonObject) -> JsonObject:
        """The operating-context project gate (docs/tools.md, "get_operating_context"), the pause
        step (docs/tools.md, "pause_persistence"), the handler.

        The gate runs before the pause check and before the library: a refusal
        is returned as is; otherwise the notes (warning, resolved project) are
        added to the answer (a skipped body under a pause included).
        """
        args, notes, refusal = await project_gate.apply(spec, env, args)
        if refusal is not None:
            return refusal
        env, skipped = await pausing.apply(spec, env, args)  # after the gate, before the handler
        if skipped is not None:
            return {**skipped, **notes} if notes else skipped
        body = await pausing.run(spec, env, args)
        return {**body, **notes} if notes else body


AXIS_ARGUMENTS = (
    "agent_id",
    "project_id",
    "channel",
    "source_id",
    "source_agent_id",
    "target_agent_id",
)


def _axis_problem(args: JsonObject, limit: int) -> str | None:
    """Agent, project and channel names are identifiers, bounded like any key."""
    for name in AXIS_ARGUMENTS:
        value = args.get(name)
        if isinstance(value, str) and len(value) > limit:
            return f"{name} too long ({len(value)} chars, max {limit})"
    return None


def _outcome(body: JsonObject) -> str:
    if "error" in body or body.get("ok") is False:
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
    """Serve the caller's tenant operating-context summary as ``instructions``.

    One server serves every tenant, so the instructions cannot be fixed at
    construction: this middleware fills them into each ``initialize`` answer
    (the handshake era) and each ``server/discover`` answer (the 2026-07-28
    revision) from the tenant of the request's credential (nothing when none is set).
    """

    def __init__(self, lib: Library, resolve_caller: Callable[[], Caller]) -> None:
        self._lib = lib
        self._resolve_caller = resolve_caller

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method not in INSTRUCTED_METHODS:
            return result
        summary = await storage.instructions_for(self._lib, self._resolve_caller().tenant_id)
        if not summary:
            return result
        if isinstance(result, BaseModel):
            return result.model_copy(update={"instructions": summary})
        return {**result, "instructions": summary}


def dispatcher_schema(specs: Sequence[ToolSpec], name: str) -> JsonObject | None:
    for spec in specs:
        if spec.name == name:
            return spec.input_schema
    return None
