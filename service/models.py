"""What the library returns and takes: id types and frozen records."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Literal, NewType

TenantId = NewType("TenantId", uuid.UUID)
AgentName = NewType("AgentName", str)
Permission = Literal["none", "read", "read-write"]
PERMISSIONS: tuple[Permission, ...] = ("none", "read", "read-write")
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
