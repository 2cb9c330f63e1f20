"""What the library returns and takes: id types and frozen records."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Literal, NewType

TenantId = NewType("TenantId", uuid.UUID)
AgentName = NewType("AgentName", str)
Permission = Literal["none", "read", "read-write"]
PERMISSIONS: tuple[Permission, ...] = ("none", "read", "read-write")
ToolSet = Literal["all", "everyday"]
TOOL_SETS: tuple[ToolSet, ...] = ("all", "everyday")
"""A key's tool set: every tool, or the memory tools of a session (docs/tools.md)."""
JsonObject = dict[str, Any]
"""A JSON object as the library returns it and a tool answers it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: resolved from the API key, never from tool arguments."""

    tenant_id: TenantId
    tenant_slug: str
    key_id: str
    label: str
    grants: dict[str, Permission]
    tool_set: ToolSet = "all"  # which tools the key lists and may call
    credential: str = ""  # what authenticated the call ('' = the API key ``key_id``)

    @property
    def credential_id(self) -> str:
        """The credential behind the call: ``key:<KEY_ID>`` for an API key,
        ``grant:<CLIENT_ID>:<KEY_ID>`` for a built-in OAuth token (one grant: a client
        authorised from a key), ``oauth:<SUB>`` for an external issuer's token.

        Key ids are public inside a tenant, so state that belongs to one credential
        (the session ledger, docs/tools.md) is keyed by this, never by a name the
        client sends."""
        return self.credential or f"key:{self.key_id}"
