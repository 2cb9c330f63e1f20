"""Per-key grants with CPersona's ACL semantics inside a tenant (docs/tools.md, "Grants").

Permissions order ``none < read < read-write``. The effective permission for
agent A is the exact grant when present (even if lower than ``*``), else the
``*`` grant, else none. A sweep (empty or absent agent argument) is satisfied
only at the minimum of all grant values, and only when a ``*`` grant exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from service.models import Caller, Permission

_RANK: dict[str, int] = {"none": 0, "read": 1, "read-write": 2}
SWEEP = "*"


def effective(grants: Mapping[str, Permission], agent: str) -> Permission:
    if agent == SWEEP:
        if SWEEP not in grants:
            return "none"
        return min(grants.values(), key=lambda level: _RANK[level])
    if agent in grants:
        return grants[agent]
    return grants.get(SWEEP, "none")


def allows(grants: Mapping[str, Permission], agent: str, required: Permission) -> bool:
    return _RANK[effective(grants, agent)] >= _RANK[required]


def key_agent(grants: Mapping[str, Permission]) -> str:
    """The one agent ``grants`` let a key write, or ``""`` when there is not exactly one: a
    ``*`` read-write grant reaches every agent, so it names none. What an omitted
    ``agent_id`` stands for (``ToolSpec.agent_from_key``); it reaches nothing the key could
    not reach by naming the agent."""
    if grants.get(SWEEP) == "read-write":
        return ""
    writable = [
        agent for agent, level in grants.items() if agent != SWEEP and level == "read-write"
    ]
    return writable[0] if len(writable) == 1 else ""


def sees(caller: Caller) -> Callable[[str], bool]:
    """Whether ``caller`` may see an agent's rows (read on it): id-keyed edits answer "not
    found" for the rows of any other agent, so they never tell whether such a row exists."""
    grants = caller.grants
    return lambda agent: allows(grants, agent, "read")


def denial(
    caller: Caller, agent: str | None, required: Permission, where: Mapping[str, object]
) -> dict[str, Any]:
    """The ``permission_denied`` failure (docs/tools.md, "Answers and failures") of a tool or an
    HTTP route.

    ``where`` names what was refused (``{"tool": name}`` or ``{"endpoint": path}``);
    ``agent`` is None when the demand is not about one agent.
    """
    body: dict[str, Any] = {"ok": False, "error": "permission_denied", **where}
    if agent is not None:
        body["agent_id"] = agent
    body["required"] = required
    body["client_id"] = caller.label or caller.key_id
    return body


def file_denial(
    caller: Caller, required: Permission, where: Mapping[str, object]
) -> dict[str, Any]:
    """The ``permission_denied`` failure for an export-area file holding an agent the
    caller lacks ``required`` on. It names no agent (the file's agents are not the
    caller's to learn), only ``detail: "not permitted"``."""
    return {**denial(caller, None, required, where), "detail": "not permitted"}
