"""Parameter schemas shared by several tools, with descriptions written for the model."""

from __future__ import annotations

from service.models import JsonObject

AGENT_ID: JsonObject = {
    "type": "string",
    "description": "Agent whose memory this is. Memories of different agents never mix.",
}
OWNER_AGENT_ID: JsonObject = {
    "type": "string",
    "default": "",
    "description": (
        "Your agent id: when given, the row must belong to this agent. Empty acts on any "
        "agent's row of your tenant."
    ),
}
LIST_AGENT_ID: JsonObject = {
    "type": "string",
    "default": "",
    "description": "Agent to list; empty lists every agent of your tenant.",
}
PROJECT_ID: JsonObject = {
    "type": "string",
    "description": (
        "Project bucket. Writes go to this bucket ('' = the global pool). Reads see the "
        "bucket plus the global pool; '' reads the global pool only; omit to read all projects."
    ),
}
WRITE_PROJECT_ID: JsonObject = {**PROJECT_ID, "default": ""}
CHANNEL: JsonObject = {
    "type": "string",
    "default": "",
    "description": "Channel (e.g. a chat room). Reads see this channel plus channel-less rows.",
}
MEMORY_ID: JsonObject = {"type": "integer", "description": "Memory id (the N of ref mem:N)."}
EPISODE_ID: JsonObject = {"type": "integer", "description": "Episode id (the N of ref ep:N)."}
