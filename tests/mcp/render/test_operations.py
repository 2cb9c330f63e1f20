"""The operator family's renderers answer the exact wire objects the tools answered before
the library returned records: same keys, same key order, same omissions."""

from __future__ import annotations

import json
from types import MappingProxyType

from service.mcp.render import operating_context as render_context, queue as render_queue
from service.memory.operating_context import describe, model
from service.memory.queue import backlog
from service.models import JsonObject


def _bytes(body: JsonObject) -> str:
    """The JSON text of a body: key order included, as the wire carries it."""
    return json.dumps(body)


def _context() -> model.OperatingContext:
    return model.OperatingContext(
        revision="r7",
        summary="be kind",
        project_ids=("atlas", "borealis"),
        enforce="warn",
        defaults=MappingProxyType({"alpha": "atlas"}),
        doctrine=(model.Doctrine("b-section", "B"), model.Doctrine("a-section", "A")),
    )


def test_queue_status_renders_the_disabled_and_the_draining_shapes() -> None:
    off = render_queue.queue_status(backlog.QueueStatus(active=None))
    assert _bytes(off) == _bytes({"enabled": False, "pending": 0})
    queue = backlog.ActiveQueue(
        pending=2, retrying=1, oldest_pending_seconds=12.345, max_retries=3, retry_delay=30
    )
    on = render_queue.queue_status(backlog.QueueStatus(active=queue))
    expected: JsonObject = {
        "enabled": True,
        "pending": 2,
        "max_retries": 3,
        "retry_delay": 30,
        "retrying": 1,
        "oldest_pending_seconds": 12.3,
    }
    assert _bytes(on) == _bytes(expected)


def test_operating_context_renders_the_preview_and_a_section() -> None:
    ctx = _context()
    preview: JsonObject = {
        "ok": True,
        "context_revision": "r7",
        "instructions_summary": "be kind",
        "registry": {"project_ids": ["atlas", "borealis"], "enforce": "warn"},
        "defaults": {"alpha": "atlas"},
        "doctrine_sections": ["a-section", "b-section"],
    }
    assert _bytes(render_context.description(describe.describe(ctx))) == _bytes(preview)
    section: JsonObject = {
        "ok": True,
        "context_revision": "r7",
        "section": "b-section",
        "body": "B",
    }
    found = describe.describe(ctx, "b-section")
    assert _bytes(render_context.description(found)) == _bytes(section)
