"""Bundling: candidates into clusters by deterministic keys (docs/tools.md,
"reconstruct", bundling). Pure: nothing here looks at what a row says, only at the
identifiers and timestamps it was stored with and the record-to-record relations the
agent declared. One cluster becomes one item."""

from __future__ import annotations

from collections.abc import Sequence

from service.db.reconstruct import Link
from service.memory.reconstruct.records import Row

WHY_RELATION = "relation:"


class Union:
    """Union-find over candidate indices. The lower index stays representative, so the
    result does not depend on merge order; ``why`` keeps, per joined index, the first
    key that joined it (keys are applied strongest first)."""

    def __init__(self, n: int) -> None:
        self._parent = list(range(n))
        self.why: dict[int, str] = {}

    def find(self, i: int) -> int:
        while self._parent[i] != i:
            self._parent[i] = self._parent[self._parent[i]]
            i = self._parent[i]
        return i

    def union(self, a: int, b: int, why: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        lo, hi = (ra, rb) if ra < rb else (rb, ra)
        self._parent[hi] = lo
        for index in (a, b):
            self.why.setdefault(index, why)

    def clusters(self) -> list[list[int]]:
        """The clusters, members in index order, ordered by their representative."""
        grouped: dict[int, list[int]] = {}
        for i in range(len(self._parent)):
            grouped.setdefault(self.find(i), []).append(i)
        return [grouped[key] for key in sorted(grouped)]


def message_key(row: Row) -> tuple[str, str] | None:
    """A memory's (project, msg_id) identity; None without a msg_id or a readable
    project (unknown context never establishes identity)."""
    if row.kind != "mem" or not row.msg_id or row.project_id is None:
        return None
    return row.project_id, row.msg_id


def contains(episode: Row, row: Row) -> bool:
    """Whether the memory ``row`` lies in ``episode``'s [start, end] with the same
    (project, channel); an episode missing a bound contains nothing."""
    return (
        row.kind == "mem"
        and episode.kind == "ep"
        and row.at is not None
        and episode.start is not None
        and episode.end is not None
        and row.context is not None
        and row.context == episode.context
        and episode.start <= row.at <= episode.end
    )


def bundle(rows: Sequence[Row], links: Sequence[Link], adjacency_seconds: float) -> Union:
    """Apply the keys in order: same message, inside an episode, one source's burst
    (within ``adjacency_seconds`` of the burst's first row; the anchor does not slide),
    then declared record-to-record relations between two candidates."""
    uf = Union(len(rows))
    _by_message(uf, rows)
    _by_episode(uf, rows)
    if adjacency_seconds > 0:
        _by_source(uf, rows, adjacency_seconds)
    index = {row.ref: i for i, row in enumerate(rows)}
    for link in links:
        if link.subject in index and link.object in index and link.subject != link.object:
            uf.union(index[link.subject], index[link.object], WHY_RELATION + link.predicate)
    return uf


def _by_message(uf: Union, rows: Sequence[Row]) -> None:
    groups: dict[tuple[str, str], list[int]] = {}
    for i, row in enumerate(rows):
        key = message_key(row)
        if key is not None:
            groups.setdefault(key, []).append(i)
    for _, members in sorted(groups.items()):
        for other in members[1:]:
            uf.union(members[0], other, "cluster:msg_id")


def _by_episode(uf: Union, rows: Sequence[Row]) -> None:
    for e, episode in enumerate(rows):
        if episode.kind != "ep":
            continue
        for m, row in enumerate(rows):
            if contains(episode, row):
                uf.union(e, m, "cluster:episode")


def _by_source(uf: Union, rows: Sequence[Row], window: float) -> None:
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for i, row in enumerate(rows):
        if row.source_id and row.at is not None and row.context is not None:
            key = (row.source_type, row.source_id, *row.context)
            groups.setdefault(key, []).append(i)
    for _, members in sorted(groups.items()):
        ordered = sorted(members, key=lambda i: _timeline(rows[i]))
        anchor = ordered[0]
        for right in ordered[1:]:
            at, start = rows[right].at, rows[anchor].at
            assert at is not None  # grouped on a parsed timestamp
            assert start is not None
            if (at - start).total_seconds() <= window:
                uf.union(anchor, right, "cluster:adjacent")
            else:
                anchor = right


def _timeline(row: Row) -> tuple[float, str, int]:
    return (row.at.timestamp() if row.at is not None else 0.0, row.kind, row.id)
