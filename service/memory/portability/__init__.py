"""Portability: export, import and merge of an agent's (or a tenant's) memory.

The record format is CPersona's JSONL (``cpersona-export/1.0``, and reading
``cpersona-export/1.1``), byte-compatible both ways. Everything streams: an
export reads server-side cursors in batches inside one snapshot, an import
parses line by line and inserts in batches inside one transaction, so memory
stays flat however large the corpus. ``files`` and ``signing`` give the MCP
tools their hosted form: a confined export area per tenant and short-lived
signed download URLs instead of arbitrary server paths.
"""

from __future__ import annotations
