"""The lexical half of a long query is bounded by what relevance can use (issue 36).

A query at the input cap (16,000 characters) used to search its first 32 words and up to
32 substring patterns, each pattern an ``ILIKE`` over every candidate row's text: 1.6-2.5 s
of Postgres per call in the soak. Now at most ``CPERSONA_RECALL_MAX_TERMS`` words (the
longest) and ``CPERSONA_RECALL_MAX_PATTERNS`` patterns (the longest), and the LIKE fallback
matches a bounded prefix (docs/reliability.md, "Fair shares of the database").
"""

from __future__ import annotations

import dataclasses

from service.config import Settings
from service.db.pool import Database
from service.memory.library import Library
from service.memory.memories import store
from service.memory.recall import pipeline, query_terms, retrieve
from service.memory.tenants import create_tenant
from service.models import TenantId

WORDS = [f"w{'x' * (n % 7)}{n:03d}" for n in range(40)]
"""40 distinct words of lengths 4 to 10 (``wxxxxxx006`` is among the longest)."""


def test_a_long_query_searches_its_longest_words_up_to_the_bound() -> None:
    terms = query_terms.build(" ".join(WORDS), max_terms=16)
    longest = sorted(WORDS, key=lambda w: (-len(w), WORDS.index(w)))[:16]
    assert list(terms.lexemes) == [w for w in WORDS if w in longest]  # query order kept
    assert terms.tsquery == " | ".join(f"'{w}'" for w in terms.lexemes)


def test_a_long_query_keeps_its_longest_patterns_up_to_the_bound() -> None:
    identifiers = [f"id-{'x' * (n % 5)}-{n}" for n in range(20)]
    terms = query_terms.build(" ".join(identifiers), max_patterns=8)
    longest = sorted(identifiers, key=lambda s: (-len(s), identifiers.index(s)))[:8]
    assert terms.patterns == tuple(query_terms.like_pattern(s) for s in identifiers if s in longest)


def test_a_query_within_the_bounds_is_unchanged() -> None:
    text = "Caroline painted the CVE-2024-3094 sunrise in 10:30 light"
    built = query_terms.build(text)
    assert query_terms.build(text, max_terms=9, max_patterns=2) == built
    assert built.lexemes == (
        "caroline",
        "painted",
        "cve",
        "2024",
        "3094",
        "sunrise",
        "10",
        "30",
        "light",
    )
    assert built.patterns == ("%CVE-2024-3094%", "%10:30%")


def test_the_default_bounds_hold_for_a_query_at_the_input_cap(lib: Library) -> None:
    query = " ".join(f"word{n} id-{n}-x" for n in range(2000))[:16_000]
    request = pipeline.RecallRequest(agent_id="a", query=query)
    built = query_terms.build(
        query, lib.settings.recall_max_terms, lib.settings.recall_max_patterns
    )
    wanted = retrieve.retrieval(lib, request, 100, built, "hybrid")
    assert len(wanted.lexemes) == lib.settings.recall_max_terms == 16
    assert len(wanted.patterns) == lib.settings.recall_max_patterns == 8
    pattern = retrieve.fallback_pattern(query)
    assert pattern == query_terms.like_pattern(query[: retrieve.FALLBACK_CHARS])
    assert retrieve.FALLBACK_CHARS == 256


async def test_the_setting_bounds_the_words_a_recall_searches(
    db: Database, settings: Settings
) -> None:
    tenant = TenantId((await create_tenant(db, "acme")).id)
    wide = Library(db, settings)
    await store.store(wide, tenant, store.StoreRequest("a", {"content": "a zebra at the gate"}))
    request = pipeline.RecallRequest(agent_id="a", query="zebra elephantine")
    assert [row.content for row in (await pipeline.recall(wide, tenant, request)).rows] == [
        "a zebra at the gate"
    ]
    narrow = Library(db, dataclasses.replace(settings, recall_max_terms=1))
    assert (await pipeline.recall(narrow, tenant, request)).rows == ()  # only "elephantine"
