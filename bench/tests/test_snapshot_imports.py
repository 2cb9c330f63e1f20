"""The benches that import the service from their snapshot must be able to.

``bench.harness.snapshot.use_snapshot`` refuses once ``service`` is imported, so no module
these benches import at start may import the service itself (a helper that needs it
imports it inside the function). Checked in a fresh interpreter: this test process has
the service imported already.
"""

from __future__ import annotations

import subprocess
import sys

from bench.harness.serving import REPO_ROOT

SNAPSHOT_IMPORTERS = (
    "bench.economy.excerpts",
    "bench.quality.locomo",
    "bench.quality.longmemeval",
    "bench.harness.snapshot",
)


def test_the_benches_that_import_their_snapshot_do_not_import_the_service_first() -> None:
    probe = "; ".join(
        [
            "import importlib, sys",
            *(f"importlib.import_module({name!r})" for name in SNAPSHOT_IMPORTERS),
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'service'))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"
