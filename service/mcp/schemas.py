"""Parameter schemas shared by several tools, with descriptions written for the model.

Descriptions stay short (the whole catalogue is budgeted, see docs/tools.md): a
parameter whose name says it all has none; the types, bounds and defaults say the rest.
Every string and list is bounded (``maxLength`` / ``maxItems``), one cap per kind
(``service.memory.bounds``, docs/reliability.md "Input bounds (hardening round two)").
"""

from __future__ import annotations

from service.memory import bounds
from service.models import JsonObject


def string(cap: int, **extra: object) -> JsonObject:
    """A string of at most ``cap`` characters (``extra``: default, description, ...)."""
    return {"type": "string", "maxLength": cap, **extra}


def identifier(**extra: object) -> JsonObject:
    """An agent, project, channel or source name."""
    return string(bounds.IDENTIFIER_CHARS, **extra)


def name(**extra: object) -> JsonObject:
    """A short word or name (a section, a precision, a check, a file name)."""
    return string(bounds.NAME_CHARS, **extra)


def names(description: str) -> JsonObject:
    """A list of short names, ``[]`` by default."""
    return {
        "type": "array",
        "items": name(),
        "maxItems": bounds.LIST_ITEMS,
        "default": [],
        "description": description,
    }


AGENT_ID: JsonObject = identifier()
OWNER_AGENT_ID: JsonObject = identifier(default="", description="must own the row")
LIST_AGENT_ID: JsonObject = identifier(default="", description="'' = all")
PROJECT_ID: JsonObject = identifier(description="reads add project ''; omit = all")
WRITE_PROJECT_ID: JsonObject = identifier(default="", description="'' = shared pool")
CHANNEL: JsonObject = identifier(default="", description="reads add channel ''")
MEMORY_ID: JsonObject = {"type": "integer", "description": "mem:N"}
EPISODE_ID: JsonObject = {"type": "integer", "description": "ep:N"}
SUPERSEDES: JsonObject = {
    "type": "array",
    "items": name(),
    "maxItems": 256,
    "description": "refs it replaces",
}
"""store's and archive_episode's ``supersedes`` (docs/tools.md, "Facts that change"): past
64 refs each is dropped by the library; the schema refuses a list past 256, as
declare_associations' lists."""
AS_OF: JsonObject = string(64, description="ISO date/time (UTC if no zone): memory then")
CURRENT_ONLY: JsonObject = {
    "type": "boolean",
    "default": False,
    "description": "leave out superseded",
}
