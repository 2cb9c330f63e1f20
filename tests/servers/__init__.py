"""Real servers the tests start on loopback: Postgres helpers (test databases, a
streaming standby from the embedded binaries, :mod:`tests.servers.postgres`), the
suite's pooler mode (:mod:`tests.servers.pooling`), the HTTP embedding server
(:mod:`tests.servers.embedding`), PgBouncer and HAProxy (:mod:`tests.servers.proxies`)
and ``serve`` processes (:mod:`tests.servers.processes`). The benchmarks (``bench/``)
use the same helpers; nothing here imports ``bench``."""

from __future__ import annotations

import pytest

from tests.servers.processes import ServerError
from tests.servers.proxies import require


def installed_or_skip(*programs: str) -> None:
    """Skip the test where Debian's ``haproxy``/``pgbouncer`` are not installed (CI
    installs them in .ci/run; CPERSONA_TEST_POOLER=pgbouncer never skips)."""
    for program in programs:
        try:
            require(program)
        except ServerError as exc:
            pytest.skip(str(exc))
