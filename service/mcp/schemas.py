"""Parameter schemas shared by several tools, with descriptions written for the model.

Descriptions stay short (the whole catalogue is budgeted, see docs/tools.md): a
parameter whose name says it all has none; the types, bounds and defaults say the rest.
"""

from __future__ import annotations

from service.models import JsonObject

AGENT_ID: JsonObject = {"type": "string"}
OWNER_AGENT_ID: JsonObject = {
    "type": "string",
    "default": "",
    "description": "must own the row",
}
LIST_AGENT_ID: JsonObject = {"type": "string", "default": "", "description": "'' = all"}
PROJECT_ID: JsonObject = {
    "type": "string",
    "description": "reads add project ''; omit = all",
}
WRITE_PROJECT_ID: JsonObject = {
    "type": "string",
    "default": "",
    "description": "'' = shared pool",
}
CHANNEL: JsonObject = {
    "type": "string",
    "default": "",
    "description": "reads add channel ''",
}
MEMORY_ID: JsonObject = {"type": "integer", "description": "mem:N"}
EPISODE_ID: JsonObject = {"type": "integer", "description": "ep:N"}
