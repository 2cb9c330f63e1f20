"""The operating context's project_id gate at the boundary (docs/tools.md, "get_operating_context").

The dispatcher applies it to every tool whose spec has ``project_gate`` (the six
project tools), after the ACL check and before the pause step and the library, so
library callers keep CPersona's exact semantics and never see the ``'@auto'``
sentinel or the registry. A write is a tool that is not read-only; a refused call
answers with its own tool's refusal shape plus ``operating_context_revision``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from service.mcp.registry import ToolEnv, ToolSpec
from service.memory.operating_context import gate, storage
from service.models import JsonObject

P = TypeVar("P")


def refusal(spec: ToolSpec[Any], message: str, revision: str | None) -> JsonObject:
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
    spec: ToolSpec[P], env: ToolEnv, params: P
) -> tuple[P, JsonObject, JsonObject | None]:
    """Gate one call's ``project_id``: (parameters to use, keys to add to the answer, refusal).

    When the refusal is not None it is the answer and nothing else runs. Otherwise
    the call runs with the returned parameters (``project_id`` resolved, the others
    untouched) and the notes (``operating_context_warning``, ``resolved_project_id``)
    join its answer. An omitted or empty project_id costs no database round trip. The
    gated tools' records all have ``agent_id`` and ``project_id`` (``tests/mcp/test_params.py``).
    """
    project_id = getattr(params, "project_id", None)
    if not spec.project_gate or not isinstance(project_id, str) or not project_id:
        return params, {}, None
    agent_id = getattr(params, "agent_id", "")
    context = await storage.get_context(env.lib, env.caller.tenant_id)
    agent = agent_id if isinstance(agent_id, str) else ""
    result = gate.gate(context, agent, project_id, not spec.read_only)
    if result.refusal is not None:
        return params, {}, refusal(spec, result.refusal, result.revision)
    resolved: Any = params
    return dataclasses.replace(resolved, project_id=result.project_id), _notes(result), None
