"""Maintenance checks of a tenant's memory (docs/health.md, "check_health";
docs/health.md, "deep_check").

``check_health`` runs the registry of small checks (``registry.CHECKS``), each with
a name, a base severity, and an optional repair; ``deep_check`` runs the heuristic
per-agent checks. See ``docs/health.md`` for the list and the SQLite → Postgres map.
"""

from __future__ import annotations

from service.memory.health.base import exit_code, status
from service.memory.health.deep import DEEP_CHECKS, deep_check
from service.memory.health.registry import CHECK_NAMES
from service.memory.health.runner import check_health

__all__ = ["CHECK_NAMES", "DEEP_CHECKS", "check_health", "deep_check", "exit_code", "status"]
