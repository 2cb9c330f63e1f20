"""get_operating_context's answers (docs/tools.md, "Tool reference")."""

from __future__ import annotations

from service.memory.operating_context.describe import Description, Overview
from service.models import JsonObject


def description(found: Description) -> JsonObject:
    """The preview ``{ok, context_revision, instructions_summary, registry, defaults,
    doctrine_sections}`` or one section ``{ok, context_revision, section, body}``."""
    if isinstance(found, Overview):
        context = found.context
        return {
            "ok": True,
            "context_revision": context.revision,
            "instructions_summary": context.summary,
            "registry": {"project_ids": list(context.project_ids), "enforce": context.enforce},
            "defaults": dict(context.defaults),
            "doctrine_sections": context.section_names,
        }
    return {
        "ok": True,
        "context_revision": found.revision,
        "section": found.doctrine.name,
        "body": found.doctrine.body,
    }
