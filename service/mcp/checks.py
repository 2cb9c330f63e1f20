"""The checks a tool call passes before its handler runs: one ordered list, one way to say no.

``CHECKS`` is the whole chain, in order (docs/tools.md, "Answers and failures"):

1. ``InToolSet`` — the key lists and may call this tool (``--tools``);
2. ``ValidArguments`` — the arguments fit the tool's JSON Schema; the schema's defaults are
   applied and the parameters record is read (``service.mcp.params``);
3. ``KeyAgent`` — an omitted ``agent_id`` of a tool that allows it is the key's one
   writable agent (``ToolSpec.agent_from_key``), or the call is refused;
4. ``SafeText`` — every string is storable (no U+0000, no lone surrogate, bounded depth)
   and every axis name (agent, project, channel, ...) is within its bound; skipped for a
   tool whose library checks the same itself (``ToolSpec.library_checks_text``: store), so
   the checks run once;
5. ``Granted`` — the key's grants allow what the call demands of each agent;
6. ``ProjectGate`` — the operating context's project gate (reads the database);
7. ``Pause`` — the persistence pause (reads the database, or hands the write a guard).

Each check returns None to let the call go on, or a :class:`Refusal`, which is the answer.
The checks that read the database run after the call is routed (a read-only tool on the
read replica), so they see what its handler will see. A check may refine the call: the gate
resolves ``project_id``, the pause step marks the environment.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Final, Protocol

import jsonschema

from service.mcp import acl, pausing, project_gate, tools
from service.mcp.registry import ToolEnv, ToolSpec
from service.memory import bounds, text
from service.models import JsonObject

SCHEMA_MESSAGE_CHARS = 500
"""How much of a schema error's message is kept (jsonschema quotes the offending value)."""
AXIS_ARGUMENTS: Final = (
    "agent_id",
    "project_id",
    "channel",
    "source_id",
    "source_agent_id",
    "target_agent_id",
)


@dataclasses.dataclass(slots=True)
class Call:
    """One call on its way through the checks: refined as it passes them."""

    spec: ToolSpec[Any]
    env: ToolEnv
    args: JsonObject  # as sent; with the schema's defaults once validated
    params: Any = None  # the parameters record, once ValidArguments has read it
    notes: JsonObject = dataclasses.field(default_factory=dict)  # the gate's additions


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """A check's no: ``answer`` is the tool result (a JSON object, or the plain text of a
    schema error), ``outcome`` what the usage meter counts (None: read from the answer),
    ``is_error`` the result's ``isError`` flag."""

    answer: JsonObject | str
    outcome: str | None = None
    is_error: bool = False


class Check(Protocol):
    reads_database: bool

    async def __call__(self, call: Call) -> Refusal | None: ...


class InToolSet:
    reads_database = False

    async def __call__(self, call: Call) -> Refusal | None:
        caller, name = call.env.caller, call.spec.name
        if tools.in_tool_set(caller.tool_set, name):
            return None
        answer = {
            "error": f"{name} is not in this key's tool set ({caller.tool_set}); "
            "ask the operator for a key created with --tools all",
            "tool": name,
            "tool_set": caller.tool_set,
        }
        return Refusal(answer, "not_in_tool_set", is_error=True)


class ValidArguments:
    """The JSON Schema check, with one validator per tool compiled at start-up."""

    reads_database = False

    def __init__(self, specs: tuple[ToolSpec[Any], ...]) -> None:
        self._validators = {
            spec.name: jsonschema.Draft202012Validator(spec.input_schema) for spec in specs
        }

    async def __call__(self, call: Call) -> Refusal | None:
        schema = call.spec.input_schema
        args = without_null_defaults(schema, call.args)
        error = jsonschema.exceptions.best_match(self._validators[call.spec.name].iter_errors(args))
        if error is not None:
            message = f"Input validation error: {schema_message(error)}"
            return Refusal(message, "invalid_input", is_error=True)
        call.args = with_defaults(schema, args)
        call.params = call.spec.read(call.args)
        return None


AGENT_REQUIRED = (
    "agent_id is required: it can be omitted only on a connection whose ACL grants write "
    "access to exactly one agent"
)


class KeyAgent:
    """An omitted ``agent_id`` of a tool declared ``agent_from_key`` becomes the one agent
    the key can write (the answer adds ``resolved_agent_id``); with no such agent the call
    is refused (CPersona 2.6's store)."""

    reads_database = False

    async def __call__(self, call: Call) -> Refusal | None:
        if not call.spec.agent_from_key or call.args.get("agent_id") is not None:
            return None
        agent = acl.key_agent(call.env.caller.grants)
        if not agent:
            return Refusal(call.spec.refusal(AGENT_REQUIRED))
        call.args = {**call.args, "agent_id": agent}
        call.params = call.spec.read(call.args)
        call.notes = {**call.notes, "resolved_agent_id": agent}
        return None


class SafeText:
    reads_database = False

    def __init__(self, axis_limit: int) -> None:
        self._axis_limit = axis_limit

    async def __call__(self, call: Call) -> Refusal | None:
        if call.spec.library_checks_text:
            return None
        problem = text.text_problem(call.args) or axis_problem(call.args, self._axis_limit)
        return None if problem is None else Refusal(call.spec.refusal(problem))


class Granted:
    reads_database = False

    async def __call__(self, call: Call) -> Refusal | None:
        caller = call.env.caller
        for agent, required in call.spec.demands(call.args):
            if not acl.allows(caller.grants, agent, required):
                return Refusal(acl.denial(caller, agent, required, {"tool": call.spec.name}))
        return None


class ProjectGate:
    reads_database = True

    async def __call__(self, call: Call) -> Refusal | None:
        call.params, notes, refusal = await project_gate.apply(call.spec, call.env, call.params)
        call.notes = {**call.notes, **notes}
        return None if refusal is None else Refusal(refusal)


class Pause:
    reads_database = True

    async def __call__(self, call: Call) -> Refusal | None:
        call.env, skipped = await pausing.apply(call.spec, call.env, call.params)
        if skipped is None:
            return None
        return Refusal({**skipped, **call.notes} if call.notes else skipped)


def chain(specs: tuple[ToolSpec[Any], ...], axis_limit: int) -> tuple[Check, ...]:
    """``CHECKS``: the ordered list every call passes (see the module docstring)."""
    return (
        InToolSet(),
        ValidArguments(specs),
        KeyAgent(),
        SafeText(axis_limit),
        Granted(),
        ProjectGate(),
        Pause(),
    )


def with_defaults(schema: JsonObject, args: JsonObject) -> JsonObject:
    """``args`` with every omitted top-level property that declares a ``default`` set to
    (a copy of) it: the schema is the one place a default is written. Properties without a default
    stay absent (``project_id`` omitted means "every project", which no default can say);
    the parameters record reads them as None."""
    properties = schema.get("properties", {})
    defaults = {
        name: copy.deepcopy(prop["default"])
        for name, prop in properties.items()
        if "default" in prop and name not in args
    }
    return {**args, **defaults}


def without_null_defaults(schema: JsonObject, args: JsonObject) -> JsonObject:
    """``args`` without the top-level nulls of properties that declare a default: a null
    there means "not given" (archive_episode's ``resolved: null`` is false, docs/tools.md,
    "Tool reference"), so the schemas stay single-typed (no ``["boolean", "null"]`` unions
    that strict validators flag) and clients that send null keep working."""
    properties = schema.get("properties", {})
    return {
        name: value
        for name, value in args.items()
        if not (value is None and "default" in properties.get(name, {}))
    }


def schema_message(error: jsonschema.ValidationError) -> str:
    """jsonschema's message for ``error``, short: its own quotes the offending value whole
    (a 600 KB query came back in the answer), so a too-long string or list is named by its
    path with its length and cap (the library's wording, ``bounds.too_long``), and any
    other message is cut at ``SCHEMA_MESSAGE_CHARS``."""
    if error.validator in ("maxLength", "maxItems") and isinstance(error.instance, str | list):
        where = "/".join(str(part) for part in error.absolute_path) or "arguments"
        unit = "characters" if error.validator == "maxLength" else "items"
        cap = error.validator_value
        return bounds.too_long(where, len(error.instance), cap if isinstance(cap, int) else 0, unit)
    message = error.message
    if len(message) > SCHEMA_MESSAGE_CHARS:
        return message[:SCHEMA_MESSAGE_CHARS] + "…"
    return message


def axis_problem(args: JsonObject, limit: int) -> str | None:
    """Agent, project and channel names are identifiers, bounded like any key."""
    for name in AXIS_ARGUMENTS:
        value = args.get(name)
        if isinstance(value, str) and len(value) > limit:
            return f"{name} too long ({len(value)} chars, max {limit})"
    return None
