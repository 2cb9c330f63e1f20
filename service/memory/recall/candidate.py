"""What ranking works on: a recall row with its signals, the tunables, the gate.

The ranking modules (``fusion``, ``penalty``, ``confidence``, ``gate``, ``rank``) are pure
and deterministic. The storage layer retrieves one candidate list per channel (vector,
episode full text, memory full text/keyword, profile); everything that turns them into
the ordered answer follows the documented steps (docs/tools.md, "Recall steps") in those
modules.

Contract:

* No I/O, no clock, no configuration lookup: time enters as an explicit ``now`` and every
  tunable as an argument (:class:`Tunables` carries the defaults of README.md, "Configuration").
* Rows are frozen :class:`Candidate` values; every step returns a new list and never
  mutates its input. Sorting is stable, so equal scores keep retrieval order.
* Exclusion (``exclude_contents``; docs/tools.md, "Excluding what the caller holds") is
  decided by the caller, which hands a channel over with each excluded row replaced by
  ``None`` (a *hole*, ``fusion.mark_excluded``): a hole keeps its position, so an rrf rank
  still counts the excluded row's place (docs/tools.md, "Fusion modes"), yet the row never
  surfaces. Holes, not an ``excluded`` predicate, because one predicate cannot tell an
  episode found by the vector channel (excludable) from the same episode found by episode
  full text (never excluded).
* Timestamps are the stored ISO-8601 strings, parsed leniently (``time.parse_timestamp``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Final, Literal, NotRequired, TypeAlias, TypedDict, cast

Kind: TypeAlias = Literal["mem", "ep", "profile"]


Mode: TypeAlias = Literal["hybrid", "rrf", "rsf", "cascade"]


Signal: TypeAlias = Literal["confidence", "hybrid", "rsf", "cosine", "rrf"]


Identity: TypeAlias = tuple[Kind, int]


PROFILE_ID: Final = -1
"""Id of the injected profile sentinel row (docs/tools.md, "Retrievers")."""


PROFILE_MIN_POOL: Final = 50
"""Pool size from which the profile row passes the gate (docs/tools.md, "Quality gate": the profile
rule, on memories plus episodes)."""


UNSCORED_MIN_POOL: Final = 100
"""Pool size from which unscored rows pass the gate of a non-empty query
(docs/tools.md, "Quality gate": the unscored rule)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One recall row and the signals it has earned so far.

    ``None`` means "never computed" rather than zero: a row without any of ``confidence``,
    ``rsf``, ``cosine`` or ``rrf`` is *unscored* (docs/tools.md, "Quality gate": the unscored rule)
    and carries no ``match_reason`` (docs/tools.md, "Recall rows"). ``lexical`` is the full-text
    score on a higher-is-better scale (``-bm25`` in CPersona, the Postgres retriever's own rank
    here; docs/architecture.md, "Recall"), ``None`` for the LIKE fallback. ``timestamp`` is the
    caller's timestamp for a memory, ``start_time`` else ``created_at`` for an episode, ``""`` for
    the profile. ``resolved`` is only set on episodes; ``recall_count`` and ``last_recalled_at``
    only mean something on memories. ``hybrid`` is the weighted score of the default fusion (plus
    the second stage's text features); ``matched`` says the row shares a word (or stem, or substring
    pattern) with the query, which is what keeps it through the hybrid gate. ``vector_unseen`` marks
    a row matched lexically that the vector channel could not score although embeddings are
    on (the row has no vector yet, or the query could not be embedded): the gate keeps it
    (``gate.mark_vector_unseen``).
    """

    kind: Kind
    id: int
    content: str
    timestamp: str = ""
    created_at: datetime | None = None
    cosine: float | None = None
    lexical: float | None = None
    rrf: float | None = None
    rsf: float | None = None
    confidence: float | None = None
    hybrid: float | None = None
    matched: bool = False
    cosine_backfilled: bool = False
    resolved: bool = False
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    vector_unseen: bool = False

    @property
    def identity(self) -> Identity:
        """Fusion identity: memory 1 and episode 1 are different rows (docs/tools.md, "Refs")."""
        return (self.kind, self.id)

    @property
    def is_profile(self) -> bool:
        """Whether this is the injected profile sentinel."""
        return self.kind == "profile"


_FIELDS: Final = tuple(f.name for f in fields(Candidate))
_FIELD_SET: Final = frozenset(_FIELDS)
_SETTERS: Final[dict[str, Callable[[Candidate, object], None]]] = {
    name: getattr(Candidate, name).__set__ for name in _FIELDS
}
"""Each field's slot setter (the slot descriptor's ``__set__`` bypasses the frozen
``__setattr__``)."""


def _copier() -> Callable[[Candidate], Candidate]:
    """A function that copies every slot of a candidate, generated from the fields.

    Generated like the ``__init__`` of ``dataclasses`` itself: one plain attribute read
    and one slot store per field, no loop and no ``getattr`` by name (about 5 times
    cheaper than a loop over the field names).
    """
    lines = ["def copy(row):", "    new = new_candidate(Candidate)"]
    lines += [f"    set_{name}(new, row.{name})" for name in _FIELDS]
    lines.append("    return new")
    scope: dict[str, object] = {"new_candidate": object.__new__, "Candidate": Candidate}
    scope.update({f"set_{name}": setter for name, setter in _SETTERS.items()})
    exec("\n".join(lines), scope)  # built from the dataclass's own field names only
    return cast(Callable[[Candidate], Candidate], scope["copy"])


_copy: Final = _copier()


def evolve(row: Candidate, **changes: object) -> Candidate:
    """``row`` with ``changes``: ``dataclasses.replace`` for the hot path.

    A hybrid recall copies every candidate once or twice (fusion, the second stage), about
    160 copies per call; ``replace`` inspects the fields and runs ``__init__`` each time,
    this copies the slots with generated code (:func:`_copier`) and then sets the changed
    ones. Like ``replace``, an unknown field name raises TypeError; values are not
    validated (neither does ``__init__``).
    """
    unknown = changes.keys() - _FIELD_SET
    if unknown:
        raise TypeError(f"Candidate has no field(s) {sorted(unknown)}")
    new = _copy(row)
    for name, value in changes.items():
        _SETTERS[name](new, value)
    return new


Channel: TypeAlias = Sequence[Candidate | None]
"""One retriever's rows in rank order; ``None`` marks an excluded row (a hole)."""


@dataclass(frozen=True, slots=True)
class Tunables:
    """The recall and confidence tunables, with their defaults (README.md, "Configuration").

    Floors that the reference applies when parsing (``RRF_K`` at least 1, autocut
    ``MIN_RESULTS`` at least 2) are applied again where the value is used, so a raw value
    can never divide by zero or make autocut look at a one-row list.
    """

    rrf_k: int = 60
    rrf_threshold_factor: float = 0.5
    episode_penalty_enabled: bool = True
    episode_decay_rate: float = 0.01
    episode_decay_floor: float = 0.5
    autocut_enabled: bool = True
    autocut_min_results: int = 3
    autocut_min_gap_ratio: float = 0.15
    confidence_enabled: bool = False
    vector_seats: int = 0
    cosine_floor: float = 0.20
    cosine_ceil: float = 0.75
    decay_rate: float = 0.005
    decay_floor: float = 0.3
    decay_ceil: float = 0.5
    recall_boost: float = 0.02
    boost_decay_rate: float = 0.002
    min_time_range_hours: float = 24.0
    reference_hours: float = 168.0
    resolved_decay_factor: float = 0.3
    recent_recall_penalty: float = 0.7
    recent_recall_window_min: float = 5.0


DEFAULT_TUNABLES: Final = Tunables()


@dataclass(frozen=True, slots=True)
class CalibratedGate:
    """A calibrated gate threshold and the signal it was calibrated on
    (docs/tools.md, "Quality gate"; docs/tools.md, "calibrate_threshold").

    It replaces the heuristic only in the gate branch of the same signal, so a gate
    calibrated under another configuration never meets a score of a different scale.
    An ``rrf`` gate is on the raw rrf scale.
    """

    threshold: float
    signal: Signal


class MatchReason(TypedDict):
    """The ``match_reason`` object of a recall message."""

    signal: Signal
    score: float
    cosine: NotRequired[float]
    rrf: NotRequired[float]
    rsf: NotRequired[float]
    hybrid: NotRequired[float]
    cue_rank: NotRequired[int]  # the row's rank on the cue arm (docs/tools.md, "Time cues")


class HeldReason(TypedDict):
    """The ``match_reason`` of a held row: a place beside the answer, never gated nor
    credited (docs/tools.md, "Time cues": a cue seat)."""

    signal: Literal["cue"]
    admission: Literal["reservation"]
    cue_rank: int


# Signal accessors: one row's value of one signal, None when it was never computed.


def cosine_of(row: Candidate) -> float | None:
    return row.cosine


def lexical_of(row: Candidate) -> float | None:
    return row.lexical


def rrf_of(row: Candidate) -> float | None:
    return row.rrf


def rsf_of(row: Candidate) -> float | None:
    return row.rsf


def hybrid_of(row: Candidate) -> float | None:
    return row.hybrid


def confidence_of(row: Candidate) -> float | None:
    return row.confidence


def _or_lowest(value: float | None) -> float:
    return -math.inf if value is None else value


def sorted_desc(
    rows: Iterable[Candidate], signal: Callable[[Candidate], float | None]
) -> list[Candidate]:
    """Stable descending sort on one signal; rows without it sink to the bottom."""
    return sorted(rows, key=lambda row: _or_lowest(signal(row)), reverse=True)
