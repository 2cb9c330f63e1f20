"""Where one call's time goes: timed intervals of a request, attributed to phases (pure).

The instrumented server (:mod:`bench.latency.hook.sitecustomize`) records, for every request,
the intervals during which a wrapped function ran: the edge, authentication, admission,
the SDK's handler, the dispatcher's checks, schema validation, the library call, each SQL
round trip, the embedding, ranking, rendering, JSON encoding. Wrapped functions nest and
some run concurrently (a recall's lexical statement runs while its query is embedded), so
inclusive times do not add up. :func:`attribute` sweeps the intervals and gives every
instant of the request to the most specific phase running then (the lowest ``LEVEL``;
concurrent phases of that level share the instant evenly), so a request's phases add up
to its time inside the server exactly. The client's own latency minus that time is the
client, HTTP and uvicorn outside the application (``OUTSIDE``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence

from bench.harness.stats import percentile

LEVEL: dict[str, int] = {
    "sql": 0,
    "pool acquire": 0,
    "embedding": 0,
    "schema validation": 0,
    "JSON encoding (tool body)": 0,
    "JSON encoding (SDK response)": 0,
    "token accounting": 0,
    "ranking": 0,
    "library (other Python)": 1,
    "rendering": 1,
    "tool checks (dispatcher)": 2,
    "SDK request handling": 3,
    "authentication": 4,
    "admission (limits, body, lane)": 4,
    "edge (host check, guard, log)": 5,
}
"""Phases and how specific each is: an instant goes to the running phase of lowest level."""

OUTSIDE = "client, HTTP, uvicorn (outside the app)"
TOTAL = "total (client-observed)"
ORDER = [OUTSIDE, *sorted(LEVEL, key=lambda name: -LEVEL[name])]
"""Table order: from the outermost phase in to the leaves."""


@dataclasses.dataclass(frozen=True)
class Interval:
    """One wrapped function's run inside a request (``perf_counter`` seconds)."""

    phase: str
    start: float
    end: float


def attribute(intervals: Iterable[Interval]) -> dict[str, float]:
    """Seconds per phase such that every instant covered by some interval counts once.

    An instant goes to the phases of the lowest ``LEVEL`` running then; when several
    distinct phases of that level run at once, they share it evenly. Unknown phases
    are an error (a typo in the hook would otherwise vanish from the table).
    """
    spans = [i for i in intervals if i.end > i.start]
    for span in spans:
        if span.phase not in LEVEL:
            raise ValueError(f"unknown phase {span.phase!r}")
    edges = sorted({t for span in spans for t in (span.start, span.end)})
    seconds: dict[str, float] = {}
    for left, right in itertools.pairwise(edges):
        active = {s.phase for s in spans if s.start <= left and s.end >= right}
        if not active:
            continue
        level = min(LEVEL[p] for p in active)
        leaves = sorted(p for p in active if LEVEL[p] == level)
        for phase in leaves:
            seconds[phase] = seconds.get(phase, 0.0) + (right - left) / len(leaves)
    return seconds


@dataclasses.dataclass(frozen=True)
class Call:
    """One measured call: the client's latency and the server's intervals for it."""

    client_s: float
    intervals: Sequence[Interval]
    sql_round_trips: int


def call_phases(call: Call) -> dict[str, float]:
    """Seconds per phase of one call, with ``OUTSIDE`` (client latency minus server time,
    never below 0) and ``TOTAL`` (the client's latency)."""
    inside = attribute(call.intervals)
    outside = max(0.0, call.client_s - sum(inside.values()))
    return {**inside, OUTSIDE: outside, TOTAL: call.client_s}


@dataclasses.dataclass(frozen=True)
class PhaseSummary:
    """One phase over many calls: p50 and mean milliseconds, and its share of the mean."""

    phase: str
    p50_ms: float
    mean_ms: float
    share: float


def summarise(calls: Sequence[Call]) -> list[PhaseSummary]:
    """p50 and mean per phase in ``ORDER`` (a phase a call did not run counts 0 for it),
    then the total. The means add up to the total's mean; the p50s need not."""
    per_call = [call_phases(c) for c in calls]
    total_mean = _mean([p[TOTAL] for p in per_call])
    rows = []
    for phase in [*ORDER, TOTAL]:
        values = sorted(p.get(phase, 0.0) for p in per_call)
        mean = _mean(values)
        share = mean / total_mean if total_mean > 0 else 0.0
        rows.append(PhaseSummary(phase, 1000 * percentile(values, 50), 1000 * mean, share))
    return rows


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def pair_calls(
    client_s: Sequence[float], records: Sequence[Mapping[str, object]], tool: str
) -> list[Call]:
    """The server's records of ``tool`` matched in order to the client's latencies.

    One client calls in sequence, so the n-th record of the tool (in the order the server
    finished them) is the n-th call. The last ``len(client_s)`` records are used (warm-up
    calls come first). Raises ValueError when there are fewer records than calls.
    """
    mine = [r for r in records if r.get("tool") == tool]
    if len(mine) < len(client_s):
        raise ValueError(f"{len(mine)} server records of {tool} for {len(client_s)} calls")
    matched = mine[len(mine) - len(client_s) :]
    calls = []
    for seconds, record in zip(client_s, matched, strict=True):
        raw = record.get("intervals")
        if not isinstance(raw, list):
            raise ValueError(f"a record of {tool} has no intervals")
        spans = [Interval(str(p), float(s), float(e)) for p, s, e in raw]
        trips = sum(1 for i in spans if i.phase == "sql")
        calls.append(Call(seconds, spans, trips))
    return calls
