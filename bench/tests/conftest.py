"""The fixtures the benchmarks' own tests borrow from the product's suite.

Only the database-wait sampler needs a real Postgres (``direct_database_url``); it gets
the suite's fixtures (``tests/conftest.py``: the embedded test server, the migrated
template, a fresh database per test) and its private base temp directory, rather than
a second way to start Postgres.
"""

from __future__ import annotations

from tests.conftest import admin_url, direct_database_url, pytest_configure, template_db

__all__ = ["admin_url", "direct_database_url", "pytest_configure", "template_db"]
