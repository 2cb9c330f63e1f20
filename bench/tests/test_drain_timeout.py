"""The bound a bench waits for a stored backlog to drain grows with the backlog."""

from __future__ import annotations

from bench.harness.client import drain_timeout_s


def test_a_small_backlog_gets_the_floor_and_a_large_one_half_a_second_a_row() -> None:
    assert drain_timeout_s(100, 900.0) == 900.0
    assert drain_timeout_s(8_483, 900.0) == 8_483 * 0.5
    assert drain_timeout_s(8_483, 900.0) > drain_timeout_s(2_832, 900.0)
