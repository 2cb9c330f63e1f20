"""The ``get_operating_context`` answer (pure)."""

from __future__ import annotations

import dataclasses
from typing import TypeAlias

from service.errors import Refused
from service.memory.operating_context.model import Doctrine, OperatingContext


@dataclasses.dataclass(frozen=True, slots=True)
class Overview:
    """The preview of the whole context (no section asked for)."""

    context: OperatingContext


@dataclasses.dataclass(frozen=True, slots=True)
class Section:
    """One doctrine section of the context at ``revision``."""

    revision: str
    doctrine: Doctrine


Description: TypeAlias = Overview | Section


def dormant_message(tenant: str = "SLUG") -> str:
    return (
        "operating context is dormant — no operating context is set for this tenant; an "
        f"operator sets one with `cpersona-service context set --tenant {tenant} FILE.toml`"
    )


def describe(
    context: OperatingContext | None, section: str = "", *, tenant: str = "SLUG"
) -> Description:
    """What ``get_operating_context`` answers (docs/tools.md, "Tool reference"): the preview, or
    one section; Refused when the tenant is dormant or the section unknown."""
    if context is None:
        raise Refused(dormant_message(tenant), enabled=False)
    if section:
        found = context.section(section)
        if found is None:
            raise Refused(
                f"unknown doctrine section '{section}'", doctrine_sections=context.section_names
            )
        return Section(context.revision, found)
    return Overview(context)
