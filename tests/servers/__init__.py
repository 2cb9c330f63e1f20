"""Real servers the tests start on loopback: Postgres helpers (test databases, a
streaming standby from the embedded binaries) and the suite's pooler mode (the HTTP
embedding server is ``tests/embedding_server.py``). PgBouncer and HAProxy come from
:mod:`bench.proxies` and ``serve`` processes from :mod:`bench.harness`, shared with the
benchmarks."""

from __future__ import annotations

import pytest

from bench.harness import BenchError
from bench.proxies import require


def installed_or_skip(*programs: str) -> None:
    """Skip the test where Debian's ``haproxy``/``pgbouncer`` are not installed (CI
    installs them in .ci/run; CPERSONA_TEST_POOLER=pgbouncer never skips)."""
    for program in programs:
        try:
            require(program)
        except BenchError as exc:
            pytest.skip(str(exc))
