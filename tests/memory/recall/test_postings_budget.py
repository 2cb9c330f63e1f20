"""``CPERSONA_RECALL_POSTINGS_BUDGET`` reaches the lexical channel of every recall.

The budget is how many postings of the rarest query terms BM25 scores in full; rows that
hold only commoner terms compete only when the rare rows are fewer than the lexical
depth. A recall through the library, not the statement alone, must honour the setting.
"""

from __future__ import annotations

import dataclasses

from service.memory import tenants
from service.memory.library import Library
from service.memory.memories import store
from service.memory.recall import pipeline
from service.models import TenantId

RARE = [f"zephyr note {n}" for n in range(3)]
COMMON = [f"ordinary filler plain text {n}" for n in range(6)]
QUERY = "zephyr ordinary filler plain text"  # one rare word, four common ones


async def _recalled(lib: Library, budget: int) -> list[str]:
    """What a recall of QUERY returns with the lexical depth 3 and ``budget``."""
    settings = dataclasses.replace(lib.settings, recall_depth=3, recall_postings_budget=budget)
    tuned = Library(lib.db, settings)
    tenant = TenantId((await tenants.create_tenant(lib.db, f"budget-{budget}")).id)
    for text in RARE + COMMON:
        await store.store(tuned, tenant, store.StoreRequest("a", {"content": text}))
    result = await pipeline.recall(tuned, tenant, pipeline.RecallRequest("a", QUERY, limit=3))
    return [row.content for row in result.rows]


async def test_with_every_posting_in_the_budget_four_common_words_outscore_one_rare(
    lib: Library,
) -> None:
    recalled = await _recalled(lib, budget=2000)
    assert recalled
    assert all(text.startswith("ordinary") for text in recalled)


async def test_a_budget_of_the_rare_word_alone_scores_its_rows_only(lib: Library) -> None:
    """Budget 3: 'zephyr' (3 rows) fits and fills the depth of 3, so the rows of the
    common words are never read."""
    recalled = await _recalled(lib, budget=3)
    assert recalled
    assert all(text.startswith("zephyr") for text in recalled)
