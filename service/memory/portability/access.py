"""Who touches the export area, and the refusal when a file holds an agent they may not.

The library knows nothing of keys or ACL rules: the MCP boundary and the HTTP routes
hand it an :class:`Access` built from the caller's key (its KEY_ID and the grants'
predicate, ``service.mcp.acl``). A file holds the agents whose records it contains;
reading one (import, download) needs ``read`` on each of them, overwriting one
``read-write`` on each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from service.errors import Refused
from service.models import Permission


@dataclasses.dataclass(frozen=True, slots=True)
class Access:
    """The caller: the KEY_ID recorded as a file's writer, and what its grants allow."""

    key_id: str
    allows: Callable[[str, Permission], bool]


class AgentDenied(Refused):
    """The caller lacks ``required`` on ``agent``, an agent the file holds.

    Rendered as the spec's ``permission_denied`` shape by the caller of the library.
    """

    def __init__(self, agent: str, required: Permission) -> None:
        super().__init__("permission_denied")
        self.agent = agent
        self.required = required


def require(access: Access, agents: Iterable[str], required: Permission) -> None:
    """Raise AgentDenied for the first agent (in name order) ``access`` lacks ``required`` on."""
    for agent in sorted(set(agents)):
        if not access.allows(agent, required):
            raise AgentDenied(agent, required)
