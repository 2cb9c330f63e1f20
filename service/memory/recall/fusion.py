"""Candidate assembly and fusion (docs/tools.md, "Retrievers"; docs/tools.md, "Fusion modes"): the
mode, the vector threshold, exclusion holes, the default weighted ``hybrid`` fusion, and the spec's
rrf, rsf and cascade."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from service.memory.recall.candidate import (
    Candidate,
    Channel,
    Identity,
    Mode,
    cosine_of,
    evolve,
    lexical_of,
)


def recall_mode(configured: str, query: str) -> Mode:
    """The fusion mode of one recall (step 4 of docs/tools.md, "Recall steps").

    ``hybrid`` / ``rrf`` / ``rsf`` only for a query with non-whitespace text; any empty
    query, mode ``cascade`` or an unknown mode string falls back to cascade (a pure recency
    listing has nothing to fuse).
    """
    if not query.strip():
        return "cascade"
    if configured == "hybrid":
        return "hybrid"
    if configured == "rrf":
        return "rrf"
    return "rsf" if configured == "rsf" else "cascade"


def vector_min_similarity(threshold: float, mode: Mode, factor: float = 0.5) -> float:
    """Similarity floor of the vector retriever.

    Cascade uses the agent's vector threshold as is; rrf and rsf loosen it by
    ``RRF_THRESHOLD_FACTOR`` (0.3 x 0.5 = 0.15 by default) because the fused gate filters
    later.
    """
    return threshold if mode == "cascade" else threshold * factor


def mark_excluded(rows: Iterable[Candidate], excluded: Callable[[Candidate], bool]) -> Channel:
    """Replace each excluded row by a hole, keeping every position."""
    return [None if excluded(row) else row for row in rows]


def rrf_max_scale(k: int) -> float:
    """``RRF_MAX_SCALE = 3/(K+1)``: rank 0 in all three channels (docs/tools.md, "Fusion modes";
    README.md, "Configuration"); K at least 1."""
    return 3.0 / (max(1, k) + 1)


def fuse_rrf(
    channels: Sequence[Channel], k: int = 60, *, profiles: Sequence[Candidate] = ()
) -> list[Candidate]:
    """Reciprocal-rank fusion, then the profile rows appended.

    Each row at 0-based position ``r`` of a channel adds ``1/(K + r + 1)`` to its
    identity's score; holes add nothing but still occupy their position. Pass channels in
    the canonical order (vector, episode full-text, memory full-text): the first occurrence
    of an identity is the row kept, so a vector hit keeps its cosine. Sorted by score,
    descending and stable (first-seen order breaks ties).
    """
    k = max(1, k)
    first: dict[Identity, Candidate] = {}
    scores: dict[Identity, float] = {}
    for channel in channels:
        for rank, row in enumerate(channel):
            if row is None:
                continue
            first.setdefault(row.identity, row)
            scores[row.identity] = scores.get(row.identity, 0.0) + 1.0 / (k + rank + 1)
    order = sorted(scores, key=scores.__getitem__, reverse=True)
    return [evolve(first[key], rrf=scores[key]) for key in order] + list(profiles)


def normalise_channel(raw: Sequence[float | None]) -> list[float]:
    """Per-query min-max normalisation of one channel's raw scores to [0, 1] (rsf in
    docs/tools.md, "Fusion modes").

    An all-``None`` channel (the LIKE fallback has no score) gives every row 1.0, so an
    exact substring match still casts a full vote. A single value or all-equal values give
    every row 1.0 (checked before the ``None`` rule, as the reference does); otherwise the
    lowest value maps to 0.0, the highest to 1.0, and a ``None`` among numbers to 0.0.
    """
    present = [value for value in raw if value is not None]
    if not present:
        return [1.0] * len(raw)
    lo, hi = min(present), max(present)
    if hi <= lo:
        return [1.0] * len(raw)
    return [0.0 if value is None else (value - lo) / (hi - lo) for value in raw]


def _unique_rows(channel: Channel) -> list[Candidate]:
    """The channel without holes and without repeated identities (first kept)."""
    seen: set[Identity] = set()
    rows: list[Candidate] = []
    for row in channel:
        if row is not None and row.identity not in seen:
            seen.add(row.identity)
            rows.append(row)
    return rows


def fuse_rsf(
    vector: Channel,
    lexical: Sequence[Channel] = (),
    *,
    profiles: Sequence[Candidate] = (),
    lexical_weight: float = 0.5,
) -> list[Candidate]:
    """Relative-score fusion, then the profile rows appended.

    The raw score is ``cosine`` on the vector channel and ``lexical`` on each full-text
    channel; each channel is min-max normalised (:func:`normalise_channel`) over its
    non-excluded rows. A row's fused score is the weighted sum of its normalised values
    divided by the total weight of the non-empty channels, which keeps it on the cosine
    [0, 1] scale for the gate. ``lexical_weight`` 0.5 weighs every channel equally (the
    spec); higher values trust full text more (each text channel gets ``2w``, the vector
    channel ``2(1-w)``). First occurrence of an identity is the row kept; sorted
    descending and stable.
    """
    sources = [(vector, cosine_of, 2 * (1 - lexical_weight))] + [
        (channel, lexical_of, 2 * lexical_weight) for channel in lexical
    ]
    first: dict[Identity, Candidate] = {}
    fused: dict[Identity, float] = {}
    active = 0.0
    for channel, signal, weight in sources:
        rows = _unique_rows(channel)
        active += weight if rows else 0.0
        for row, norm in zip(rows, normalise_channel([signal(r) for r in rows]), strict=True):
            first.setdefault(row.identity, row)
            fused[row.identity] = fused.get(row.identity, 0.0) + weight * norm
    divisor = active or 1.0
    order = sorted(fused, key=fused.__getitem__, reverse=True)
    return [evolve(first[key], rsf=fused[key] / divisor) for key in order] + list(profiles)


def _share(value: float, best: float) -> float:
    return max(value, 0.0) / best if best > 0 else 0.0


def _lexical_votes(
    channels: Sequence[Channel], first: dict[Identity, Candidate]
) -> dict[Identity, float]:
    """Each text-matched row's full-text score over its channel's best (0..1; the best of
    two channels counts). A row without a score (the LIKE fallback's literal match) gets a
    full vote."""
    votes: dict[Identity, float] = {}
    for channel in channels:
        rows = _unique_rows(channel)
        best = max((row.lexical or 0.0 for row in rows), default=0.0)
        for row in rows:
            first.setdefault(row.identity, row)
            vote = 1.0 if row.lexical is None else _share(row.lexical, best)
            votes[row.identity] = max(votes.get(row.identity, 0.0), vote)
    return votes


def fuse_hybrid(
    vector: Channel,
    lexical: Sequence[Channel] = (),
    *,
    cosines: Mapping[Identity, float] | None = None,
    profiles: Sequence[Candidate] = (),
    lexical_weight: float = 0.45,
) -> list[Candidate]:
    """Weighted score fusion over the union of every channel's rows (the default mode).

    Every candidate gets both signals where they exist: its full-text score (the text
    channels) and its cosine (the vector channel, else ``cosines``: the exact cosine of its
    stored embedding, so a row found by words alone still has its similarity). Each signal
    is divided by its best value in the pool, so the best row of a signal scores 1 and a
    missing signal 0 (the theoretical minimum stays 0: the weakest candidate is not forced
    to zero as min-max would). ``hybrid = w * text + (1 - w) * vector``; negative cosines
    count 0. Unlike rank fusion, a row that only one channel found competes on its score
    and not on its rank, and ``limit`` plays no part. Sorted descending, stable; profile
    rows appended.
    """
    first: dict[Identity, Candidate] = {}
    votes = _lexical_votes(lexical, first)
    cos = dict(cosines or {})
    for row in _unique_rows(vector):
        first.setdefault(row.identity, row)
        if row.cosine is not None:
            cos[row.identity] = row.cosine
    cos = {key: cos[key] for key in first if key in cos}
    top = max(cos.values(), default=0.0)
    w = lexical_weight
    fused = {
        key: w * votes.get(key, 0.0) + (1 - w) * _share(cos.get(key, 0.0), top) for key in first
    }
    order = sorted(fused, key=fused.__getitem__, reverse=True)
    return [evolve(first[key], hybrid=fused[key], cosine=cos.get(key)) for key in order] + list(
        profiles
    )


def _extend_unique(out: list[Candidate], seen: set[Identity], channel: Channel) -> None:
    for row in channel:
        if row is not None and row.identity not in seen:
            seen.add(row.identity)
            out.append(row)


def cascade(
    vector: Channel,
    episodes: Channel,
    profiles: Sequence[Candidate],
    keyword: Channel,
    limit: int,
) -> list[Candidate]:
    """Legacy cascade recall, also every empty-query recall (step 4 of
    docs/tools.md, "Recall steps").

    Stages in order: vector rows, episode full-text rows, profile rows, then keyword rows
    filling ``limit - len(so far)`` slots. De-duplicated by identity; no fusion score is
    added and the stage order is kept. The keyword slots are counted on the keyword list as
    retrieved (the reference fetches exactly that many rows and then filters), so a hole or
    a duplicate inside the first ``remaining`` keyword rows uses up its slot.
    """
    out: list[Candidate] = []
    seen: set[Identity] = set()
    _extend_unique(out, seen, vector)
    _extend_unique(out, seen, episodes)
    out.extend(profiles)
    remaining = max(0, limit - len(out))
    _extend_unique(out, seen, keyword[:remaining])
    return out
