"""What reconstruct answers, as typed frozen records (docs/tools.md, "reconstruct").

The library hands the boundary these, never wire dicts: items **best first** (the
opposite of recall's wire order), each with its claims in claims order (newest first)
and in relevance order, and every retained claim's full stored text so the boundary can
quote it. ``as_of`` is the row's timestamp string exactly as stored: a memory's caller
timestamp (``timestamp_text``, which store fills with the write time when none is
given), an episode's ``start_time`` or, without one, its creation time in ISO-8601 UTC;
the same string recall shows as ``timestamp``.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Literal, TypeAlias

from service.db.recall import PassageMatch
from service.memory.recall.candidate import HeldReason, MatchReason
from service.memory.recall.records import Advisory, CueReport
from service.memory.reconstruct.count import CountPolicy
from service.memory.reconstruct.request import Mode
from service.memory.supersession import Fact

Kind: TypeAlias = Literal["mem", "ep"]

ROLE_WORDS: tuple[str, ...] = (
    "supports",
    "supersedes",
    "corrects",
    "qualifies",
    "contradicts",
    "temporal_predecessor",
)
"""Declared predicates read as roles (a record-to-record relation's normalized predicate)."""

CLUSTER_KEYS: tuple[str, ...] = (
    "cluster:msg_id",
    "cluster:episode",
    "cluster:adjacent",
    "cluster:relation",
)
"""Bundling keys, strongest first: the order they are applied and ``independence_reason``'s."""

Shortfall: TypeAlias = Literal[
    "count_zero", "no_relevant_evidence", "below_quality_threshold", "exhausted_candidates"
]


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    """A candidate or walked record. ``text`` is the stored text (an episode's summary,
    no label); ``as_of`` the stored timestamp string and ``at`` it parsed (None when it
    does not parse); ``project_id``/``channel`` None when the row could not be read
    (deleted under the call: it is then never joined); ``start``/``end`` an episode's
    parsed bounds; ``rank`` the relevance rank (0 = best; walked rows rank after every
    candidate); ``reserved`` a row the candidate recall seated in a held place; ``fact``
    its validity and neighbours when it is in a supersession chain (docs/tools.md, "Facts
    that change"), else None;
    ``passage`` the passage of ``text`` that matched the query best by meaning in the
    candidate recall (None: none, or the text changed since)."""

    ref: str
    kind: Kind
    id: int
    text: str
    as_of: str
    at: datetime | None
    msg_id: str
    source_type: str
    source_id: str
    project_id: str | None
    channel: str | None
    start: datetime | None
    end: datetime | None
    rank: int
    reserved: bool = False
    fact: Fact | None = None
    passage: PassageMatch | None = None

    @property
    def context(self) -> tuple[str, str] | None:
        if self.project_id is None or self.channel is None:
            return None
        return self.project_id, self.channel


@dataclasses.dataclass(frozen=True, slots=True)
class Role:
    """What the row ``ref`` is to a claim (the ref is the subject, the claim the object)."""

    ref: str
    role: str


@dataclasses.dataclass(frozen=True, slots=True)
class Claim:
    """A retained row of an item: ``why`` is 'seed' (a direct candidate no key joined),
    a cluster key, or ``relation:<predicate>``; ``hops`` only on walked rows."""

    row: Row
    why: str
    hops: int | None
    roles: tuple[Role, ...]

    @property
    def ref(self) -> str:
        return self.row.ref


ConflictReason: TypeAlias = Literal["same_msg_id_same_timestamp", "declared_contradicts"]


@dataclasses.dataclass(frozen=True, slots=True)
class Conflict:
    """Claims an item holds that cannot all be true (refs sorted): rows sharing (project,
    msg_id) and an identical timestamp (``msg_id`` set), or two current claims a declared
    ``contradicts`` relation links (``msg_id`` '')."""

    refs: tuple[str, ...]
    msg_id: str
    reason: ConflictReason = "same_msg_id_same_timestamp"


@dataclasses.dataclass(frozen=True, slots=True)
class Item:
    """One cluster: its ``head`` (the claim quoted as ``content``), ``claims`` newest
    first, ``relevance`` the same claims most relevant first (head, other members by
    rank, walked rows in walk order), why it stands alone, conflicts, how many claims the
    ``max_evidence`` cut dropped, ``held``: an item outside the window kept for a
    reserved row (after every window item), and the bounds that cut this item
    (``omitted``: rows dropped; ``reached``: a bound met), which the answer reports only
    for the items it returns."""

    head: Claim
    claims: tuple[Claim, ...]
    relevance: tuple[Claim, ...]
    independence_reason: str
    conflicts: tuple[Conflict, ...]
    claims_omitted: int
    held: bool = False
    omitted: tuple[str, ...] = ()
    reached: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Bounds:
    """The breadth bounds applied and what they did: ``lowered`` when the library
    lowered a requested ``max_hops``/``max_evidence``; ``omitted`` the bounds that
    dropped rows, ``reached`` those met."""

    top_k: int
    max_hops: int
    max_evidence: int
    lowered: bool
    omitted: tuple[str, ...]
    reached: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Cues:
    """Query expansion: the entities the query names (names as written), the extra
    lexical terms handed to the candidate recall, and how many the 32-term bound cut."""

    entities: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    terms_omitted: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RecalledRef:
    """One row of the candidate recall as the trace shows it: its ref (None for the
    profile row, which has none) and its ``match_reason`` (signal, scores, a held row's
    admission); never its text."""

    ref: str | None
    match_reason: MatchReason | HeldReason | None


@dataclasses.dataclass(frozen=True, slots=True)
class Trace:
    """The audit facts (refs, ranks, clusters, cues; never text): candidate refs best
    first, clusters as refs (in candidate order within each), the cues, and the
    candidate recall's ``limit`` (``top_k``) and rows best first."""

    candidate_refs: tuple[str, ...]
    clusters: tuple[tuple[str, ...], ...]
    cues: Cues
    recall_limit: int = 0
    recalled: tuple[RecalledRef, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Reconstruction:
    """A reconstruct's answer: ``items`` best first (window items, then held ones), the
    window policy, the bounds, the counts, the candidate recall's notices, and the
    shortfall the library can judge (the boundary may replace ``exhausted_candidates``
    with ``budget_exhausted`` when its budget cut a window item)."""

    items: tuple[Item, ...]
    count: CountPolicy
    bounds: Bounds
    candidate_count: int
    cluster_count: int
    excluded_without_provenance: int
    shortfall: Shortfall | None
    trace: Trace
    query: str
    mode: Mode | None = None
    advisory: Advisory | None = None
    gate_fallback: bool = False
    time_cue: CueReport | None = None
    """The candidate recall's time-cue report, copied (docs/tools.md, "Time cues")."""

    def bounds_for(self, returned: int) -> Bounds:
        """``bounds`` counting only the first ``returned`` items (those an answer
        returns: a budget cuts items from the end)."""
        kept = self.items[:returned]
        omitted = {name for item in kept for name in item.omitted}
        reached = {name for item in kept for name in item.reached}
        if "top_k" in self.bounds.reached:
            reached.add("top_k")
        return dataclasses.replace(
            self.bounds,
            omitted=tuple(b for b in ("max_evidence", "max_hops") if b in omitted),
            reached=tuple(b for b in ("top_k", "max_evidence") if b in reached),
        )

    @property
    def window_count(self) -> int:
        return sum(1 for item in self.items if not item.held)

    @property
    def reserved_count(self) -> int:
        return sum(1 for item in self.items if item.held)
