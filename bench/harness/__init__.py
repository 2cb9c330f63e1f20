"""What every benchmark shares: the real service as a subprocess (``serving``), the
official MCP client (``client``), command-line edges and result files (``cli``), CPU
accounting (``cpu``), machine facts (``machine``), Markdown tables (``markdown``),
latency statistics (``stats``) and code snapshots (``snapshot``).
"""

from __future__ import annotations
