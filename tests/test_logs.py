"""Repeating failures are one log line per class per interval, never a traceback each."""

from __future__ import annotations

import logging
import uuid

import pytest
import structlog

from service import logs
from service.errors import DatabaseUnavailable


def test_a_throttle_lets_one_line_per_key_through_and_counts_the_rest() -> None:
    throttle = logs.Throttle(interval=60)
    assert throttle.allow("a") == 0
    assert throttle.allow("a") is None
    assert throttle.allow("a") is None
    assert throttle.allow("b") == 0
    expired = logs.Throttle(interval=0)
    assert expired.allow("a") == 0
    assert expired.allow("a") == 0


def test_a_logged_unavailable_loses_its_traceback_and_repeats_are_dropped() -> None:
    event = f"batch failed {uuid.uuid4()}"
    try:
        raise DatabaseUnavailable("the database is not reachable")
    except DatabaseUnavailable:
        first = logs._throttle_unavailable(
            None, "error", {"event": event, "exc_info": True, "level": "error"}
        )
        with pytest.raises(structlog.DropEvent):
            logs._throttle_unavailable(None, "error", {"event": event, "exc_info": True})
    assert "exc_info" not in first
    assert first["level"] == "warning"
    assert first["error"] == "database_unavailable"
    assert first["detail"] == "the database is not reachable"


def test_other_exceptions_keep_their_traceback() -> None:
    try:
        raise ValueError("a bug")
    except ValueError:
        event = logs._throttle_unavailable(None, "error", {"event": "x", "exc_info": True})
    assert event["exc_info"] is True


def test_a_library_warning_repeating_during_an_outage_is_one_line_without_traceback() -> None:
    message = f"Failed to restore the pool connection floor {uuid.uuid4()}"
    noisy = logs._RepeatingLibraryWarnings()

    def record() -> logging.LogRecord:
        try:
            raise OSError("refused")
        except OSError as exc:
            return logging.LogRecord(
                "asyncpg.pool", logging.WARNING, "", 0, message, (), (OSError, exc, None)
            )

    first = record()
    assert noisy.filter(first) is True
    assert first.exc_info is None
    assert noisy.filter(record()) is False
    other = logging.LogRecord("service.app", logging.WARNING, "", 0, message, (), None)
    assert noisy.filter(other) is True
