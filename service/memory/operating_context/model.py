"""The operating context of a tenant (CPersona 2.5.1 sidecar;
docs/tools.md, "get_operating_context") as a value.

An operator sets it from a TOML file (``cpersona-service context set``); ``parse``
validates it, ``storage`` keeps it normalised as JSON in Postgres, and it is served
three ways: by the ``get_operating_context`` tool (``describe``), as the MCP
``instructions`` of the tenant's clients (``storage.instructions_for``), and as the
project_id ``gate`` of the six project tools. A tenant without a context is
*dormant*: no instructions, no gate, ``'@auto'`` stored literally."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

AUTO = "@auto"


FORMAT_VERSION = 1


Enforce = Literal["off", "warn", "reject"]


ENFORCE_MODES: tuple[Enforce, ...] = ("off", "warn", "reject")


MAX_FILE_CHARS = 1_000_000


MAX_SUMMARY_CHARS = 16_000


MAX_NAME_CHARS = 256


SUMMARY_WARN_CHARS = 3_000


_KNOWN_KEYS: Mapping[str, frozenset[str]] = {
    "": frozenset(
        {"version", "context_revision", "instructions", "registry", "defaults", "doctrine"}
    ),
    "instructions": frozenset({"summary"}),
    "registry": frozenset({"project_ids", "enforce"}),
    "doctrine": frozenset({"name", "body"}),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Doctrine:
    name: str
    body: str


@dataclasses.dataclass(frozen=True, slots=True)
class OperatingContext:
    """A validated context: what the tool serves and the gate enforces."""

    revision: str
    summary: str
    project_ids: tuple[str, ...]
    enforce: Enforce
    defaults: Mapping[str, str]
    doctrine: tuple[Doctrine, ...]

    @property
    def section_names(self) -> list[str]:
        return sorted(section.name for section in self.doctrine)

    def section(self, name: str) -> Doctrine | None:
        return next((section for section in self.doctrine if section.name == name), None)
