"""The operating context's project_id gate at the boundary (docs/tools.md, "get_operating_context").

The dispatcher applies it to every tool whose spec has ``project_gate`` (the six
project tools), after the ACL check and before the pause step and the library, so
library callers keep CPersona's exact semantics and never see the ``'@auto'``
sentinel or the registry. A write is a tool that is not read-only; a refused call
answers with its own tool's refusal shape plus ``operating_context_revision``.
"""

from __future__ import annotations

from service.mcp.registry import ToolEnv, ToolSpec
from service.memory.operating_context import gate, storage
from service.models import JsonObject


def refusal(spec: ToolSpec, message: str, revision: str | None) -> JsonObject:
    """A gated tool's refusal: its own failure shape with the ``error`` (store's shape has
    only ``reason`` otherwise) and the context's revision."""
    return {
        "ok": False,
        "error": message,
        **spec.refusal(message),
        "operating_context_revision": revision,
    }


def _notes(result: gate.GateResult) -> JsonObject:
    notes: JsonObject = {}
    if result.warning is not None:
        notes["operating_context_warning"] = result.warning
    if result.echo_resolved:
        notes["resolved_project_id"] = result.project_id
    return notes


async def apply(
    spec: ToolSpec, env: ToolEnv, args: JsonObject
) -> tuple[JsonObject, JsonObject, JsonObject | None]:
    """Gate one call's ``project_id``: (arguments to use, keys to add to the answer, refusal).

    When the refusal is not None it is the answer and nothing else runs. Otherwise
    the call runs with the returned arguments (``project_id`` resolved, other keys
    untouched) and the notes (``operating_context_warning``, ``resolved_project_id``)
    join its answer. An omitted or empty project_id costs no database round trip.
    """
    project_id = args.get("project_id")
    if not spec.project_gate or not isinstance(project_id, str) or not project_id:
        return args, {}, None
    agent_id = args.get("agent_id", "")
    context = await storage.get_context(env.lib, env.caller.tenant_id)
    agent = agent_id if isinstance(agent_id, str) else ""
    result = gate.gate(context, agent, project_id, not spec.read_only)
    if result.refusal is not None:
        return args, {}, refusal(spec, result.refusal, result.revision)
    return {**args, "project_id": result.project_id}, _notes(result), None
