"""Pure parts of the recall-latency benchmark: the synthetic corpus, queries, plan outlines."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bench.latency import (
    loader as scale_corpus,
    queries as latency_queries,
    report as latency_report,
    synthetic as scale_texts,
)


def test_spread_splits_rows_evenly() -> None:
    plans = scale_corpus.spread(10, tenants=2, agents_per_tenant=2)
    assert [p.rows for p in plans] == [3, 3, 2, 2]
    assert [(p.tenant, p.agent) for p in plans[:2]] == [
        ("scale-t000", "agent-00"),
        ("scale-t000", "agent-01"),
    ]


def test_scale_texts_are_unique_per_agent_and_vectors_unit_length() -> None:
    rng = random.Random(1)
    seen: set[str] = set()
    batch = scale_texts.unique_texts(rng, [0, 0, 0, 1] * 50, seen)
    assert len(set(batch)) == len(batch) == 200
    assert seen == set(batch)
    assert scale_texts.topic_words(0) != scale_texts.topic_words(len(scale_texts.DOMAINS))
    nrng = np.random.default_rng(3)
    rows = scale_texts.clustered(nrng, scale_texts.centroids(5), [0, 1, 2])
    assert rows.shape == (3, scale_texts.DIMENSION)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    encoded = scale_texts.vector_bytes(rows)
    assert len(encoded) == 3
    assert len(encoded[0]) == 4 + 4 * scale_texts.DIMENSION


def test_query_texts_are_unique_and_mix_corpus_and_foreign_words() -> None:
    queries = latency_queries.query_texts(60, seed=2)
    assert len(set(queries)) == 60
    assert queries == latency_queries.query_texts(60, seed=2)
    names = set(scale_texts.NAMES)
    assert any(not any(n in q for n in names) for q in queries)
    vectors = latency_queries.corpus_like_vectors(4, seed=2)
    assert len(vectors) == 4
    assert len(vectors[0]) == scale_texts.DIMENSION


PLAN = """Limit  (cost=1..2 rows=10) (actual time=0.1..0.2 rows=10 loops=1)
  CTE lexical
    ->  Bitmap Heap Scan on memories m  (cost=1..2)
          Recheck Cond: (content_tsv @@ q)
  ->  Index Scan using memories_embedding_384 on memories  (never executed)
  ->  Seq Scan on agents a
        Filter: (name = 'x')
Planning Time: 0.5 ms
Execution Time: 1.25 ms"""


def test_common_word_queries_take_the_most_widespread_words_and_skip_stop_words() -> None:
    from service.memory.recall.query_terms import word_lexeme

    texts = [f"the cat and the dog saw a bird {n}" for n in range(20)] + ["rare owl"] * 3
    texts += [f"the cat ran {n}" for n in range(5)]
    queries = latency_queries.common_word_queries(texts, 40, 7, word_lexeme)
    assert len(queries) == len(set(queries)) == 40
    used = {word for query in queries for word in query.split()}
    assert {"cat", "dog", "saw", "bird"} <= used
    assert not used & {"the", "and", "a"}
    assert all(len(query.split()) == 3 for query in queries)


def test_plan_outline_keeps_access_paths_and_hides_conditions() -> None:
    assert latency_report.plan_outline(PLAN) == [
        "Limit  (cost=1..2 rows=10) (actual time=0.1..0.2 rows=10 loops=1)",
        "  CTE lexical",
        "    ->  Bitmap Heap Scan on memories m  (cost=1..2)",
        "  ->  Seq Scan on agents a",
        "Planning Time: 0.5 ms",
        "Execution Time: 1.25 ms",
    ]


def test_plan_times() -> None:
    plans = {"chosen": PLAN, "force_generic_plan": "Seq Scan on x"}
    assert latency_report.plan_times(plans) == "chosen: 1.25 ms, force_generic_plan: ?"


def test_the_vector_check_counts_ties_with_the_exact_kth_as_found() -> None:
    from bench.latency.plans import versus_exact

    exact = [0.9, 0.8, 0.7, 0.7]
    # another row as close as the exact 4th: found, although the sort listed a twin
    assert versus_exact([0.9, 0.8, 0.7, 0.7], exact, k=4) == (1.0, 1.0)
    recall, ratio = versus_exact([0.9, 0.8, 0.6, 0.5], exact, k=4)
    assert recall == 0.5
    assert ratio == pytest.approx(2.8 / 3.1)
    assert versus_exact([], [], k=4) == (1.0, 1.0)
    assert versus_exact([0.9], exact, k=4)[0] == 0.25  # a starved channel finds less
