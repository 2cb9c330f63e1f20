"""get_queue_status's answer (docs/tools.md, "Tool reference")."""

from __future__ import annotations

from service.memory.queue.backlog import QueueStatus
from service.models import JsonObject


def queue_status(status: QueueStatus) -> JsonObject:
    """``{enabled, pending, max_retries, retry_delay, retrying, oldest_pending_seconds,
    passages_pending}``,
    just ``{enabled: false, pending: 0}`` when no queue drains; the age to a tenth of a
    second."""
    queue = status.active
    if queue is None:
        return {"enabled": False, "pending": 0}
    oldest = queue.oldest_pending_seconds
    return {
        "enabled": True,
        "pending": queue.pending,
        "max_retries": queue.max_retries,
        "retry_delay": queue.retry_delay,
        "retrying": queue.retrying,
        "oldest_pending_seconds": None if oldest is None else round(oldest, 1),
        "passages_pending": queue.passages_pending,
    }
