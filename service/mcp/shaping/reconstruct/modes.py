"""``reconstruct``'s modes: the token cap over the whole answer, and ``used_tokens``.

A mode (``lite``: 3,000 tokens, default count 10, default budget 2,800 characters;
``pro``: 5,000 tokens, count 15, no character budget) holds the **whole** JSON answer, as
the boundary renders it (``service.mcp.shaping.tokens.render``), boundary fields
included, to its cap in tokens (docs/tools.md, "reconstruct: modes"):

1. The answer at the character budget is built; when it is over the cap, a binary search
   over the payload sequence's breakpoints (the running totals ``allocate.cut`` reports)
   finds the longest prefix whose answer fits.
2. When even the first step does not fit, the first item's claims are reduced (the
   builder reports them in ``claims_omitted``), again by binary search.
3. When that does not fit either, the call fails with ``cap_below_minimum``.

The answer ends with ``mode``, ``cap`` and ``used_tokens``; ``used_tokens`` counts the
answer with itself in it, so it is solved by iterating until the count is stable. The
search relies on a longer prefix never rendering to fewer tokens; a larger cap therefore
never removes an item or an excerpt.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from service.errors import Refused
from service.mcp.shaping.reconstruct.budget import Mode
from service.mcp.shaping.tokens import TokenCounter, render

Answer = dict[str, object]
Builder = Callable[[int, int | None], Answer]
"""``build(budget_chars, first_item_claims)``: the answer (without ``mode``, ``cap`` and
``used_tokens``) at a character budget, the first item keeping at most that many claims
(None: all of them)."""

NOTICES: Final = ("advisory", "update", "suggestion", "time_cue")
"""Notices a refusal keeps: the candidate recall has told them to the session."""
DROPPED_IN_MODES: Final = ("bounds", "effective_budget", "used_budget", "reserved_omitted")
"""Envelope keys a mode's answer leaves out."""


@dataclasses.dataclass(frozen=True, slots=True)
class ModeSpec:
    """A mode: its token ``cap``, its default and maximum window, its default budget
    (None: uncapped, the cap decides)."""

    name: Mode
    cap: int
    count: int
    budget: int | None


MODES: Final = {
    "lite": ModeSpec("lite", 3000, 10, 2800),
    "pro": ModeSpec("pro", 5000, 15, None),
}


_ISO_TIME: Final = re.compile(
    r"(?P<minute>\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
    r"(?P<offset>Z|[+-]\d{2}:\d{2})"
)


def short_time(stamp: str) -> str:
    """A mode's ``as_of``: an ISO-8601 timestamp with an offset written in its shortest form
    for the same instant (zero seconds and an all-zero fraction left out, a ``+00:00``
    offset written ``Z``); any other text exactly as stored. A stored timestamp is often
    a writer's full form (``2023-05-08T13:56:00+00:00``, 21 tokens with its key): the
    shortest form (``2023-05-08T13:56Z``) costs 16, on every item of a mode's answer."""
    found = _ISO_TIME.fullmatch(stamp)
    if found is None:
        return stamp
    second, fraction = found["second"] or "00", (found["fraction"] or "").rstrip("0")
    offset = "Z" if found["offset"] == "+00:00" else found["offset"]
    if fraction:
        return f"{found['minute']}:{second}.{found['fraction']}{offset}"
    if second != "00":
        return f"{found['minute']}:{second}{offset}"
    return f"{found['minute']}{offset}"


class CapBelowMinimum(Refused):
    """cap_below_minimum"""


@dataclasses.dataclass(frozen=True, slots=True)
class Fitted:
    """The answer that fits (``mode``, ``cap``, ``used_tokens`` last), the character budget
    it was built at and the first item's claim limit (None: not reduced)."""

    answer: Answer
    budget: int
    claims: int | None

    @property
    def used_tokens(self) -> int:
        return used_tokens(self.answer)


def settle(answer: Mapping[str, object], count: TokenCounter) -> Answer:
    """``answer`` with ``used_tokens`` appended (replacing any), equal to the tokens of the
    rendered result, itself included. Starting from 0 the count can only grow with the
    digits it adds, so the iteration stops within a few rounds."""
    out = {key: value for key, value in answer.items() if key != "used_tokens"}
    used = 0
    for _ in range(16):
        out["used_tokens"] = used
        tokens = count(render(out))
        if tokens == used:
            return out
        used = tokens
    raise AssertionError("used_tokens did not settle")  # unreachable: the count is monotone


def _with_mode(answer: Answer, spec: ModeSpec, count: TokenCounter) -> Answer:
    shaped = {k: v for k, v in answer.items() if k not in ("mode", "cap", "used_tokens")}
    shaped["mode"], shaped["cap"] = spec.name, spec.cap
    return settle(shaped, count)


def used_tokens(answer: Mapping[str, object]) -> int:
    """The ``used_tokens`` of a settled answer."""
    used = answer["used_tokens"]
    if not isinstance(used, int):
        raise TypeError("used_tokens is not settled")
    return used


def _largest_fitting(
    tries: Sequence[int], attempt: Callable[[int], Answer], cap: int
) -> tuple[int, Answer] | None:
    """The largest of ``tries`` (ascending) whose answer fits ``cap``, by binary search."""
    best: tuple[int, Answer] | None = None
    low, high = 0, len(tries) - 1
    while low <= high:
        middle = (low + high) // 2
        answer = attempt(tries[middle])
        if used_tokens(answer) <= cap:
            best, low = (tries[middle], answer), middle + 1
        else:
            high = middle - 1
    return best


def fit(
    build: Builder,
    spec: ModeSpec,
    budget: int,
    breakpoints: Sequence[int],
    first_item_claims: int,
    count: TokenCounter,
) -> Fitted:
    """The answer of the longest payload prefix whose whole rendering fits ``spec.cap``.

    ``budget`` is the effective character budget, ``breakpoints`` the sequence's running
    totals (``allocate.Allocation.breakpoints``), ``first_item_claims`` how many claims
    the first item retains. Raises :class:`CapBelowMinimum` (with ``detail``, ``items:
    []``, ``returned_count: 0``, ``mode``, ``cap`` and the answer's notices) when not even
    the first step with one claim fits."""
    ends = [end for end in breakpoints if end <= budget] or list(breakpoints[:1]) or [budget]
    full = _with_mode(build(ends[-1], None), spec, count)
    if used_tokens(full) <= spec.cap:
        return Fitted(full, ends[-1], None)
    found = _largest_fitting(
        ends[:-1], lambda end: _with_mode(build(end, None), spec, count), spec.cap
    )
    if found is not None:
        return Fitted(found[1], found[0], None)
    claims = list(range(1, first_item_claims))
    reduced = _largest_fitting(
        claims, lambda n: _with_mode(build(ends[0], n), spec, count), spec.cap
    )
    if reduced is not None:
        return Fitted(reduced[1], ends[0], reduced[0])
    smallest = _with_mode(build(ends[0], 1), spec, count)
    raise CapBelowMinimum(
        "cap_below_minimum",
        detail=(
            f"the smallest answer is {used_tokens(smallest)} tokens, over mode {spec.name!r}'s cap "
            f"of {spec.cap} tokens: its first passage with one claim and the answer's own fields"
        ),
        items=[],
        returned_count=0,
        mode=spec.name,
        cap=spec.cap,
        **{key: smallest[key] for key in NOTICES if key in smallest},
    )
