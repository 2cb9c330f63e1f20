"""The project_id gate of the six project tools (docs/tools.md, "get_operating_context"), pure."""

from __future__ import annotations

import dataclasses

from service.memory.operating_context.model import AUTO, OperatingContext


@dataclasses.dataclass(frozen=True, slots=True)
class GateResult:
    """What the gate decided for one call.

    ``project_id`` is the value to pass on (None = the caller omitted it, or the
    call is refused); ``echo_resolved`` asks the boundary to add
    ``resolved_project_id`` (the caller passed ``'@auto'``).
    """

    project_id: str | None
    warning: str | None = None
    refusal: str | None = None
    echo_resolved: bool = False
    revision: str | None = None


def _unmapped(context: OperatingContext, agent_id: str, is_write: bool) -> GateResult:
    message = (
        f"@auto has no [defaults] mapping for agent_id '{agent_id}' "
        f"(rev {context.revision}); resolved to '' (global pool)"
    )
    if context.enforce == "reject" and is_write:
        return GateResult(None, refusal=message, revision=context.revision)
    warning = None if context.enforce == "off" else message
    return GateResult("", warning=warning, echo_resolved=True, revision=context.revision)


def _registered(context: OperatingContext, project: str, is_write: bool, echo: bool) -> GateResult:
    if context.enforce == "off" or project in context.project_ids:
        return GateResult(project, echo_resolved=echo, revision=context.revision)
    message = f"project_id '{project}' not in registry (rev {context.revision})"
    if context.enforce == "reject" and is_write:
        return GateResult(None, refusal=message, revision=context.revision)
    return GateResult(project, warning=message, echo_resolved=echo, revision=context.revision)


def gate(
    context: OperatingContext | None, agent_id: str, project_id: str | None, is_write: bool
) -> GateResult:
    """The gate of docs/tools.md, "get_operating_context": resolve ``'@auto'``, check the registry,
    warn or refuse.

    Omitted (None) and ``''`` always pass untouched; explicit values are never
    rewritten; only ``'@auto'`` is resolved, through ``defaults[agent_id]``.
    Reads are only ever warned, even in reject mode: a bad read filter loses
    nothing, a bad write pollutes a bucket. Dormant (no context) passes
    everything through, ``'@auto'`` included (it is then stored literally).
    """
    if context is None or not project_id:
        return GateResult(project_id, echo_resolved=project_id == AUTO)
    if project_id != AUTO:
        return _registered(context, project_id, is_write, echo=False)
    mapped = context.defaults.get(agent_id)
    if mapped is None:
        return _unmapped(context, agent_id, is_write)
    if mapped == "":
        return GateResult("", echo_resolved=True, revision=context.revision)
    return _registered(context, mapped, is_write, echo=True)
