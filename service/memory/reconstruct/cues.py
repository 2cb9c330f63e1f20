"""Query expansion through declared names (docs/tools.md, "reconstruct", query
expansion): the entities the query names, and their other names and aliases as extra
lexical terms for the candidate recall's lexical arms only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from service.db import reconstruct as queries
from service.db.pool import Connection
from service.memory.associations import normalize
from service.memory.recall.request import MAX_EXTRA_TERMS
from service.memory.reconstruct.records import Cues
from service.models import TenantId

MAX_MATCHES: Final = 64
"""Most (term, entity) matches of one query considered."""


async def expand(conn: Connection, tenant_id: TenantId, scope: queries.Scope, query: str) -> Cues:
    """The cues of ``query``; empty (and the candidate recall unchanged) when it names
    no declared entity."""
    folded = normalize(query)
    if not folded:
        return Cues()
    return terms_of(folded, await queries.cues(conn, tenant_id, scope, folded, MAX_MATCHES))


def terms_of(folded: str, found: Sequence[queries.Cue]) -> Cues:
    """Longest term first, a shorter term inside a span a longer one claimed does not
    count; each matched entity's name and aliases as written, except those the query
    already contains, at most ``MAX_EXTRA_TERMS``."""
    claimed: list[tuple[int, int]] = []
    found_terms: set[str] = set()
    matched: dict[int, queries.Cue] = {}
    for cue in found:
        hit = cue.term in found_terms or _claim(folded, cue.term, claimed)
        if hit:
            found_terms.add(cue.term)
            matched.setdefault(cue.entity_id, cue)
    terms: list[str] = []
    seen: set[str] = set()
    cut = 0
    for cue in matched.values():
        for written, normalized in ((cue.name, cue.normalized), *cue.aliases):
            if normalized in seen or normalized in folded:
                continue
            seen.add(normalized)
            if len(terms) >= MAX_EXTRA_TERMS:
                cut += 1
                continue
            terms.append(written)
    names = tuple(cue.name for cue in matched.values())
    return Cues(names, tuple(terms), cut)


def _claim(folded: str, term: str, claimed: list[tuple[int, int]]) -> bool:
    """Claim the first occurrence of ``term`` overlapping no claimed span."""
    start = folded.find(term)
    while start != -1:
        end = start + len(term)
        if all(end <= s or start >= e for s, e in claimed):
            claimed.append((start, end))
            return True
        start = folded.find(term, start + 1)
    return False
