"""CPersona Service: hosted, multi-tenant memory for AI agents over MCP, stored in PostgreSQL."""

from __future__ import annotations

__version__ = "0.1.0"
