"""The ``instructions`` of the MCP handshake (docs/tools.md, "Instructions").

Every session gets the service's own paragraph, written for the model that uses the tools:
what this server is and which tools a session calls when. A tenant's operating-context
summary (``cpersona-service context set``) follows it after a blank line. CPersona 2.6
sends its paragraph always too; 2.5 sent only the operator's text.
"""

from __future__ import annotations

SERVICE_INSTRUCTIONS = (
    "This server is your long-term memory across sessions. At the start of a session, and "
    "whenever a question depends on earlier sessions, call `reconstruct` (quoted evidence "
    "with its provenance) or `recall` (matching rows). `store` durable facts (preferences, "
    "decisions, names, results) as you learn them, and call `archive_episode` with a summary "
    "at the end of a session. Rows come as previews: `get_contents` reads them in full. The "
    "maintenance tools (pause, calibration, queue, export and import, health checks) are for "
    "questions about the memory store itself."
)


def compose(summary: str | None) -> str:
    """The instructions of a session: the service's paragraph, then the tenant's operating
    context ``summary`` after a blank line when there is one."""
    return f"{SERVICE_INSTRUCTIONS}\n\n{summary}" if summary else SERVICE_INSTRUCTIONS
