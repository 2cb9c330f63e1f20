"""The transport-ceiling benchmark: its no-op server over real HTTP and the official client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.throughput import transport_ceiling, transport_server


@pytest.mark.parametrize("chars", [0, 11, 12, 100, 6000])
def test_the_noop_reply_is_a_json_object_of_the_asked_size(chars: int) -> None:
    reply = transport_server.noop_reply(chars)
    assert json.loads(reply).keys() == {"text"}
    assert len(reply) == max(chars, len('{"text":""}'))


def test_a_short_run_measures_every_configuration_through_the_sdk(tmp_path: Path) -> None:
    args = transport_ceiling.parse_args(
        ["--calls", "40", "--warmup", "4", "--clients", "1,4", "--chars", "100,2000",
         "--out", str(tmp_path / "ceiling.json")]
    )  # fmt: skip
    results = transport_ceiling.run(args)
    runs = results["runs"]
    configurations = [(row["chars"], row["clients"]) for row in runs]
    assert configurations == [(100, 1), (100, 4), (2000, 1), (2000, 4)]
    for row in runs:
        assert row["count"] == 40  # every measured call answered, none lost or doubled
        assert row["throughput_per_s"] > 0
        assert row["cpu_per_call"]["server_ms"] > 0  # the server process's own CPU is counted
        assert row["cpu_per_call"]["client_ms"] > 0
    assert results["machine"]["nproc"] >= 1
