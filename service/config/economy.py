"""Settings of response economy at the MCP boundary: how tokens are counted, how long a
recall cursor stays valid, and the per-session ledger that stubs rows already delivered."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from service.config.fields import parse_bool, parse_int, parse_path, setting


@dataclasses.dataclass(frozen=True)
class EconomySettings:
    # -- token counting and budgets
    tokenizer: Path | None = setting(None, "CPERSONA_TOKENIZER", parse=parse_path)
    """A Hugging Face ``tokenizer.json`` counting ``max_tokens`` and metered tokens;
    None: chars/4."""
    recall_cursor_ttl: int = setting(900, "CPERSONA_RECALL_CURSOR_TTL", parse=parse_int(1, 86_400))
    """Seconds a recall ``next_cursor`` stays valid."""

    # -- the session ledger (novel_only)
    session_dedup: bool = setting(False, "CPERSONA_SESSION_DEDUP", parse=parse_bool)
    """Every recall carrying ``X-CPersona-Session`` stubs rows that session already holds."""
    session_dedup_ttl: int = setting(3600, "CPERSONA_SESSION_DEDUP_TTL", parse=parse_int(1, 86_400))
    """Seconds a session's ledger entries live after their last delivery."""
