"""The handle every library operation takes: the database and the settings.

Built once by the application factory and passed down explicitly (no module
state). The MCP boundary holds one but never reaches past it into storage.
"""

from __future__ import annotations

import dataclasses

from service.config import Settings
from service.db.pool import Database


@dataclasses.dataclass(frozen=True, slots=True)
class Library:
    db: Database
    settings: Settings
