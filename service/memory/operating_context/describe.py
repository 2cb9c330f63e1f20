"""The ``get_operating_context`` answer (pure)."""

from __future__ import annotations

from typing import Any

from service.errors import Refused
from service.memory.operating_context.model import OperatingContext


def dormant_message(tenant: str = "SLUG") -> str:
    return (
        "operating context is dormant — no operating context is set for this tenant; an "
        f"operator sets one with `cpersona-service context set --tenant {tenant} FILE.toml`"
    )


def describe(
    context: OperatingContext | None, section: str = "", *, tenant: str = "SLUG"
) -> dict[str, Any]:
    """The ``get_operating_context`` response (docs/tools.md, "Tool reference"): dormant, preview,
    or one section."""
    if context is None:
        raise Refused(dormant_message(tenant), enabled=False)
    if section:
        found = context.section(section)
        if found is None:
            raise Refused(
                f"unknown doctrine section '{section}'", doctrine_sections=context.section_names
            )
        return {
            "ok": True,
            "context_revision": context.revision,
            "section": section,
            "body": found.body,
        }
    return {
        "ok": True,
        "context_revision": context.revision,
        "instructions_summary": context.summary,
        "registry": {"project_ids": list(context.project_ids), "enforce": context.enforce},
        "defaults": dict(context.defaults),
        "doctrine_sections": context.section_names,
    }
