"""How the read router measures a replica's lag and tells its failures from the call's.

The routing itself runs against a real standby in ``tests/e2e/test_read_replica.py``;
these are the two decisions it rests on, as pure functions."""

from __future__ import annotations

import asyncpg
import pytest

from service.db.read_routing import Progress, failure_of, lag_of
from service.errors import DatabaseUnavailable, Refused


def test_a_caught_up_replica_or_a_primary_has_no_lag() -> None:
    assert lag_of(Progress(standby=True, caught_up=True, since_replay=300.0), 50.0, None) == 0.0
    assert lag_of(Progress(standby=False, caught_up=False, since_replay=None), 50.0, 1.0) == 0.0


def test_a_behind_replica_lags_by_the_smaller_upper_bound() -> None:
    behind = Progress(standby=True, caught_up=False, since_replay=30.0)
    assert lag_of(behind, started=100.0, caught_up_at=99.2) == pytest.approx(0.8)  # idle primary
    assert lag_of(behind, started=100.0, caught_up_at=None) == 30.0
    recent = Progress(standby=True, caught_up=False, since_replay=0.3)
    assert lag_of(recent, started=100.0, caught_up_at=10.0) == pytest.approx(0.3)


def test_a_behind_replica_that_never_replayed_has_unknown_lag() -> None:
    assert lag_of(Progress(standby=True, caught_up=False, since_replay=None), 5.0, None) is None


def test_replica_failures_are_found_in_the_chain_and_refusals_are_not_failures() -> None:
    gone = ConnectionRefusedError("no such socket")
    wrapped = DatabaseUnavailable("cannot connect")
    wrapped.__cause__ = asyncpg.ConnectionDoesNotExistError("closed")
    assert failure_of(gone) is gone
    assert isinstance(failure_of(wrapped), DatabaseUnavailable)
    assert failure_of(Refused("not allowed")) is None
    assert failure_of(asyncpg.UniqueViolationError("dup")) is None
