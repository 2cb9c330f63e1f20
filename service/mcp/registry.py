"""How a tool is declared: name, model-facing description, JSON Schema, parameters record,
hints, ACL, handler.

Every tool module exports ``TOOLS: list[ToolSpec[Any]]``; the server registers them in the
catalogue's order (``service.mcp.tools``). A handler is thin: take the call's parameters
record (``service.mcp.params``: read once from the validated arguments), call the library
with the caller's tenant, return the tool's JSON object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from service.config import Settings
from service.mcp.params import ParamsReader
from service.memory.library import Library
from service.memory.pauses import PauseGuard
from service.models import Caller, JsonObject, Permission

Demand = tuple[str, Permission]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolEnv:
    """What a handler gets besides its arguments."""

    lib: Library
    caller: Caller
    session_key: str = ""  # the request's X-CPersona-Session ('' = none); picks pauses only
    paused: bool = False  # set by the pause step for tools whose policy informs (no body)
    pause_guard: PauseGuard | None = None  # set by the pause step for ``in_write`` policies
    notes: JsonObject | None = None  # the project gate's notes, for a tool that places them


P = TypeVar("P")
Handler = Callable[[ToolEnv, P], Awaitable[JsonObject]]
Demands = Callable[[Mapping[str, Any]], list[Demand]]


def refuse(message: str) -> JsonObject:
    """The spec's tool-failure shape."""
    return {"ok": False, "error": message}


def refuse_with(**empty: object) -> Callable[[str], JsonObject]:
    """A tool-failure shape that also carries the tool's empty answer (e.g. ``messages=[]``),
    for the read tools whose refusal shapes the spec reserves
    (docs/tools.md, "get_operating_context")."""

    def refusal(message: str) -> JsonObject:
        return {**refuse(message), **empty}

    return refusal


SkippedBody = Callable[[ToolEnv, P], JsonObject | Awaitable[JsonObject]]


def every_call(env: ToolEnv, params: object) -> bool:
    return True


@dataclasses.dataclass(frozen=True, slots=True)
class PausePolicy(Generic[P]):
    """How a write tool answers while its tenant or session is paused
    (docs/tools.md, "pause_persistence").

    ``body`` builds the tool's success shape for these arguments with nothing
    done (zero counts, ids present); the dispatcher then marks it skipped
    (``id`` → ``"no-persist"``, action ids → null, ``persisted: false``,
    ``dry_run: true``, ``reason``). ``validate`` is the argument validation
    that runs *before* the pause check (calibrate_threshold,
    set_recall_precision): a message is answered with the tool's refusal
    shape, paused or not. Without it the pause is checked first, so bad input
    under a pause gets the skipped body (store, archive_episode, ...).
    ``applies`` says whether a call writes at all (import/merge dry runs do not
    and run normally under a pause). ``in_write`` says the library write reads the
    pause itself, inside its own transaction: the handler passes
    ``env.pause_guard`` on, and the :class:`~service.memory.pauses.WritePaused` it
    raises is answered with ``body`` as above (store, archive_episode, update_memory:
    one transaction per call instead of two).

    A policy without ``body`` informs instead of skipping: the call runs with
    ``env.paused`` set, and the handler does less (check_health reports instead
    of repairing, recall credits no statistics). ``service.mcp.pausing`` is the
    one place that reads the pause and applies a policy.
    """

    body: SkippedBody[P] | None
    validate: Callable[[P], str | None] | None = None
    applies: Callable[[ToolEnv, P], bool] = every_call
    in_write: bool = False

    def __post_init__(self) -> None:
        if self.in_write and self.body is None:
            raise ValueError("an in_write policy needs the skipped body it answers with")


def skip_with(body: JsonObject, *, in_write: bool = False) -> PausePolicy[Any]:
    """A pause policy whose skipped body is always ``body`` (a fresh copy per call)."""
    return PausePolicy(body=lambda env, params: dict(body), in_write=in_write)


def informing(applies: Callable[[ToolEnv, P], bool]) -> PausePolicy[P]:
    """A policy that runs the call with ``env.paused`` set when ``applies`` and paused."""
    return PausePolicy(body=None, applies=applies)


class DryRunnable(Protocol):
    @property
    def dry_run(self) -> bool: ...


def unless_dry_run(env: ToolEnv, params: DryRunnable) -> bool:
    """``applies`` for tools whose ``dry_run: true`` writes nothing (import, merge)."""
    return params.dry_run is not True


def never(settings: Settings) -> bool:
    return False


@dataclasses.dataclass(frozen=True, slots=True)
class ToolSpec(Generic[P]):
    """One tool: what the catalogue shows (name, description, schema, hints) and how a call
    runs (its parameters record, handler, grants, refusal shape, gate and pause policy).
    ``params`` is the dataclass the handler takes, its fields the schema's properties one
    to one (``tests/mcp/test_params.py``); its reader is planned here, once."""

    name: str
    description: str
    input_schema: JsonObject
    params: type[P]
    handler: Handler[P]
    demands: Demands
    read_only: bool = False
    destructive: bool | None = None
    idempotent: bool | None = None
    """The hints of a tool that writes, each sent only when set (None: left out), as
    CPersona 2.6 sends them (docs/tools.md, "The catalogue an agent sees")."""
    always_load: bool = False
    """Ask clients to load this tool's definition at session start instead of deferring
    it (``_meta["anthropic/alwaysLoad"]``): the tools a session needs from its first turn."""
    refusal: Callable[[str], JsonObject] = refuse
    project_gate: bool = False
    pause: PausePolicy[P] | None = None  # None: the pause never matters to this tool
    library_checks_text: bool = False
    """The library checks this tool's strings and axis names itself (store): the dispatcher's
    ``SafeText`` check leaves them to it, so they run once (``service.mcp.checks``)."""
    agent_from_key: bool = False
    """An omitted ``agent_id`` is the one agent the key can write, when there is exactly one
    (``acl.key_agent``; the answer then adds ``resolved_agent_id``); otherwise the call is
    refused before it runs (store, as CPersona 2.6)."""
    refusal_fields: Callable[[Mapping[str, Any]], JsonObject] | None = None
    """Fields every refusal of this tool carries, from its arguments, where the refusal did
    not set them itself: a grant denial or gate refusal of ``store`` says ``result:
    rejected`` (and ``locked: false`` under ``lock: true``) like its own refusals."""

    places_notes: bool = False
    """The handler places the project gate's notes (``ToolEnv.notes``) in its answer
    itself, instead of the dispatcher appending them: reconstruct's modes count every key
    of the answer in ``used_tokens``, which must stay last."""
    primary_when: Callable[[Settings], bool] = never
    """For a read-only tool: the settings under which it writes or must see its own
    writes, so it runs on the primary instead of a read replica (recall with confidence
    scoring on credits recall statistics)."""

    read: ParamsReader[P] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "read", ParamsReader(self.params))

    def reads_replica(self, settings: Settings) -> bool:
        """Whether a call may run on the read replica (CPERSONA_READ_DATABASE_URL)."""
        return self.read_only and not self.primary_when(settings)


def agent_of(args: Mapping[str, Any], key: str) -> str:
    """The agent a call is about; ``*`` (a sweep) when empty, absent or not a string."""
    value = args.get(key)
    return value if isinstance(value, str) and value else "*"


def on_agent(key: str, level: Permission) -> Demands:
    """Demand ``level`` on the agent named by argument ``key``."""

    def demands(args: Mapping[str, Any]) -> list[Demand]:
        return [(agent_of(args, key), level)]

    return demands


def any_caller(args: Mapping[str, Any]) -> list[Demand]:
    """No agent demand: any authenticated caller of the tenant may call."""
    return []


def obj(properties: JsonObject, required: list[str] | None = None) -> JsonObject:
    """A JSON Schema object of ``properties``; unknown keys are ignored like CPersona."""
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema
