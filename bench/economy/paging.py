"""Budgets and sessions against the running service: ``max_tokens`` pages and the ledger.

- :func:`budget_probe`: ``recall(limit=10, max_tokens=BUDGET)`` followed through every
  ``next_cursor``; the pages must deliver the unbudgeted answer's rows in its order.
- :func:`session_probe`: questions of one conversation asked one after another in one
  session (``X-CPersona-Session``) with ``novel_only: true``; their tokens against the
  same questions asked on their own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.client.session import ClientSession

from bench.corpora.locomo import Question
from bench.economy.estimates import tokens_chars4
from bench.economy.features import Features
from bench.harness.client import Reply, call_json, mcp_session

BUDGET = 500  # tokens per page: the issue's own paging budget
MAX_PAGES = 20
SESSION_QUESTIONS = 5  # recalls per session (the seed's inventory: ~5 a session)


def rows_of(reply: Reply) -> list[dict[str, Any]]:
    rows = reply.body.get("messages")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def best_first_refs(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(r["ref"]) for r in reversed(rows) if r.get("ref")]


def without_cursor_tokens(reply: Reply) -> int:
    """Tokens of a page without its ``next_cursor`` (what ``max_tokens`` bounds)."""
    body = {k: v for k, v in reply.body.items() if k != "next_cursor"}
    return tokens_chars4(json.dumps(body, ensure_ascii=False, separators=(",", ":")))


async def budget_probe(
    session: ClientSession, q: Question, unbudgeted: Sequence[Mapping[str, Any]], f: Features
) -> None:
    """Page one question's answer in budgets of :data:`BUDGET` tokens."""
    args = {"agent_id": q.sample_id, "query": q.text, "limit": 10}
    pages = [await call_json(session, "recall", {**args, "max_tokens": BUDGET})]
    while "next_cursor" in pages[-1].body and not pages[-1].failed and len(pages) < MAX_PAGES:
        cursor = pages[-1].body["next_cursor"]
        pages.append(await call_json(session, "recall", {**args, "cursor": cursor}))
    if any(p.failed for p in pages):
        f.counts["budget_probe_failures"] += 1
        return
    delivered = [ref for p in pages for ref in best_first_refs(rows_of(p))]
    f.pages.append(
        {
            "page_tokens": [tokens_chars4(p.text) for p in pages],
            "first_rows": len(rows_of(pages[0])),
            "cursor_chars": [len(str(p.body["next_cursor"])) for p in pages[:-1]],
            "over_budget": sum(
                len(rows_of(p)) > 1 and without_cursor_tokens(p) > BUDGET for p in pages
            ),
            "same_order": delivered == best_first_refs(unbudgeted),
        }
    )


def sessions_of(questions: Sequence[Question]) -> list[list[Question]]:
    """Consecutive questions of each conversation, :data:`SESSION_QUESTIONS` a session."""
    by_conversation: dict[str, list[Question]] = {}
    for q in questions:
        by_conversation.setdefault(q.sample_id, []).append(q)
    return [
        asked[i : i + SESSION_QUESTIONS]
        for asked in by_conversation.values()
        for i in range(0, len(asked), SESSION_QUESTIONS)
    ]


def trimmed_top(rows: Sequence[Mapping[str, Any]], count: int = 2) -> list[str]:
    """Refs of the trimmed rows among the best ``count`` rows (what a careful client
    fetches; stubs and whole rows are not fetched)."""
    top = [r for r in reversed(rows) if r.get("ref")][:count]
    return [str(r["ref"]) for r in top if r.get("content_truncated")]


async def session_probe(
    mcp_url: str, key: str, name: str, asked: Sequence[Question], f: Features
) -> None:
    """Ask ``asked`` in one fresh session with ``novel_only``, each recall followed by
    ``get_contents`` of its trimmed top two (the ledger records those too); compare with
    the same questions asked on their own."""
    tally = {"recall_novel": 0, "recall+fetch_novel": 0, "stubs": 0, "rows": 0}
    async with mcp_session(mcp_url, key, name) as client:
        for q in asked:
            args = {"agent_id": q.sample_id, "query": q.text, "limit": 10, "novel_only": True}
            reply = await call_json(client, "recall", args)
            refs = trimmed_top(rows_of(reply))
            fetched = (
                await call_json(client, "get_contents", {"agent_id": q.sample_id, "refs": refs})
                if refs
                else None
            )
            if reply.failed or (fetched is not None and fetched.failed):
                f.counts["session_probe_failures"] += 1
                return
            tally["recall_novel"] += tokens_chars4(reply.text)
            tally["recall+fetch_novel"] += tokens_chars4(reply.text) + (
                tokens_chars4(fetched.text) if fetched else 0
            )
            tally["stubs"] += sum(bool(r.get("seen")) for r in rows_of(reply))
            tally["rows"] += len(rows_of(reply))
    alone = [f.default_tokens.get((q.sample_id, q.number), (0, 0)) for q in asked]
    tally["recall_plain"] = sum(a for a, _ in alone)
    tally["recall+fetch_plain"] = sum(b for _, b in alone)
    f.sessions.append({"recalls": len(asked), **tally})
