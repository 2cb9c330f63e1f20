"""embeddings package."""

from __future__ import annotations
