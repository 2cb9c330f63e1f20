"""The embedding backlog as ``get_queue_status`` reports it.

No background queue exists yet (embeddings arrive with the recall work), so
the truthful answer is CPersona's disabled shape with nothing pending.
"""

from __future__ import annotations

from typing import Any

from service.memory.library import Library
from service.models import TenantId


async def queue_status(lib: Library, tenant_id: TenantId) -> dict[str, Any]:
    return {"enabled": False, "pending": 0}
