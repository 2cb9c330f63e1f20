"""How a recall answer reaches its caller: shaping, the token budget, the ledger, the cursor.

``recall`` and ``recall_with_context`` hand the library's answer here: typed rows, best
first (``service.memory.recall.records``). Each row is shaped (previews, excerpts:
``service.mcp.shaping.recall``, a typed record per row), rendered once into its compact
wire form (``service.mcp.render.recall.shaped``), then offered best first to
``max_tokens`` (``shaping.budget``, which costs that rendering) and, when the call uses
the session ledger, to the ledger, which stubs rows the session already holds and
records the whole rows this answer delivers (``service.memory.ledger``, one statement).
Rows the budget left out go into ``next_cursor`` (``service.memory.cursor``); ``cursor``
on a later call resumes them by ref, with no ranking run again. What previews, excerpts,
the budget and the ledger held back is noted for the usage meter. Every step keeps the
rows best first; ``render.recall.answer`` reverses them once into the wire's best-last
order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.mcp import request
from service.mcp.registry import ToolEnv
from service.mcp.render import recall as render
from service.mcp.shaping import budget, recall as shaping, tokens
from service.mcp.shaping.rows import RecallRow, Shaped
from service.memory import contents, cursor, ledger
from service.memory.contents import parse_ref
from service.memory.recall.records import Echo, RecallResult
from service.models import JsonObject


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
    """How one call wants its rows: from its arguments, or from the cursor it resumes."""

    tool: str
    agent_id: str
    query: str
    full_content: bool
    max_tokens: int | None
    novel_only: bool | None  # None: the session's policy (CPERSONA_SESSION_DEDUP)


def binding(env: ToolEnv, opts: Options) -> cursor.Binding:
    caller = env.caller
    return cursor.Binding(caller.tenant_id, caller.key_id, opts.agent_id, opts.tool, opts.query)


def ledger_session(env: ToolEnv, novel_only: bool | None) -> tuple[str, bool] | None:
    """``(stored session, stub held rows)`` when this call uses the ledger, else None.

    ``novel_only: true`` always does (the session is ``X-CPersona-Session``, else the
    key); with ``CPERSONA_SESSION_DEDUP`` every call carrying the header does, and
    ``novel_only: false`` then only records what it delivers. The session is the
    caller's credential's (``ledger.session_of``), never one another credential opened.
    """
    if novel_only is True:
        name = env.session_key or ledger.session_of_key(env.caller.key_id)
        return ledger.session_of(env.caller.credential_id, name), True
    if env.lib.settings.session_dedup and env.session_key:
        return ledger.session_of(env.caller.credential_id, env.session_key), (
            novel_only is not False
        )
    return None


def _full_texts(rows: Sequence[RecallRow]) -> dict[str, str]:
    """The library's full content of each ref row, by ref."""
    return {row.ref: row.content for row in rows if not isinstance(row, Echo) and row.ref}


def _savings(page: budget.Page, full: dict[str, str], count: tokens.TokenCounter) -> None:
    """Note what previews, excerpts, the budget and the ledger held back (usage meter)."""
    held = {"previews": 0, "excerpts": 0, "budgets": 0, "ledger": 0}
    for row in page.sent:
        text = full.get(str(row.ref))
        if text is None or row.whole:
            continue
        passage = "" if row.excerpt is None else row.excerpt.text
        shown = count(row.content) + count(passage)
        held["excerpts" if row.excerpt is not None else "previews"] += max(0, count(text) - shown)
    held["budgets"] = sum(count(full.get(ref, "")) for ref in page.left_out)
    held["ledger"] = sum(count(full.get(ref, "")) for ref in page.stubbed)
    request.note_savings(**held)


async def _page(
    env: ToolEnv, opts: Options, offers: Sequence[budget.Offer], room: int | None
) -> budget.Page:
    """Offer the ref rows (``offers`` best first) to the budget and, when used, the ledger."""
    session = ledger_session(env, opts.novel_only)
    held: frozenset[int] = frozenset()
    if session is not None:
        offered = [_offered(o) for o in offers]
        exchange = await ledger.deliver(
            env.lib, env.caller.tenant_id, session[0], offered, budget=room, look_up=session[1]
        )
        held = exchange.held
    return budget.page(offers, held, room)


async def record_whole(env: ToolEnv, refs: Sequence[str]) -> None:
    """Record rows another tool (get_contents) delivered whole to the session the request
    names (``X-CPersona-Session``, the caller's credential's), so a later ``novel_only`` or
    deduplicated recall of that session sends them as stubs."""
    parsed = list(dict.fromkeys(ref for ref in map(parse_ref, refs) if ref is not None))
    if not env.session_key or not parsed:
        return
    offered = [ledger.Offered(kind, row_id, 0, 0, True) for kind, row_id in parsed]
    session = ledger.session_of(env.caller.credential_id, env.session_key)
    await ledger.deliver(
        env.lib, env.caller.tenant_id, session, offered, budget=None, look_up=False
    )


def _offered(item: budget.Offer) -> ledger.Offered:
    parsed = parse_ref(item.ref)
    assert parsed is not None  # refs the boundary formats always parse
    return ledger.Offered(parsed[0], parsed[1], item.cost, item.stub_cost, item.whole)


def _degrade_best(
    offers: list[budget.Offer],
    full: Sequence[RecallRow],
    opts: Options,
    env: ToolEnv,
    room: int,
    count: tokens.TokenCounter,
) -> list[budget.Offer]:
    """With ``full_content``, the best row comes as a preview when it alone exceeds the
    budget (``offers``: the ref rows, ``full``: every library row, both best first)."""
    if not offers or not opts.full_content or offers[0].cost <= room:
        return offers
    previewed, _ = shaping.shape_rows(
        full,
        preview_chars=env.lib.settings.recall_preview_chars,
        full_content=False,
        query=opts.query,
    )
    ref = offers[0].ref
    best = [row for row in previewed if row.ref == ref]
    return [budget.offer(best[0], count), *offers[1:]] if best else offers


async def deliver(env: ToolEnv, opts: Options, result: RecallResult) -> JsonObject:
    """The answer for the library's ``result`` (rows best first)."""
    return await _deliver(env, opts, result.rows, render.envelope(result))


def _room(
    opts: Options, head: JsonObject, refless: Sequence[JsonObject], count: tokens.TokenCounter
) -> int | None:
    """What ``max_tokens`` leaves for the ref rows once the answer's fixed keys and the
    rows without a ref (``refless``, rendered; always sent) are paid for; None without a
    budget."""
    if opts.max_tokens is None:
        return None
    fixed = count(tokens.render({**head, "messages": []}))
    return opts.max_tokens - fixed - sum(budget.row_cost(row, count) for row in refless)


async def _deliver(
    env: ToolEnv,
    opts: Options,
    library: Sequence[RecallRow],
    envelope: JsonObject,
    missing: Sequence[str] = (),
) -> JsonObject:
    """Shape ``library`` (best first), offer its ref rows to the budget and the ledger,
    and render what they admitted; ``envelope`` follows ``messages`` on the wire. Each
    row is rendered once: a ref row by its offer, a row without a ref here."""
    shaped, spent = shaping.shape_rows(
        library,
        preview_chars=env.lib.settings.recall_preview_chars,
        full_content=opts.full_content,
        query=opts.query,
    )
    head = render.head(envelope, shaping.FULL_CONTENT_BUDGET_CHARS if spent else None)
    count = tokens.token_counter(env.lib.settings.tokenizer)
    refless = {position: render.shaped(row) for position, row in enumerate(shaped) if not row.ref}
    room = _room(opts, head, list(refless.values()), count)
    offers = [budget.offer(row, count) for row in shaped if row.ref]
    if room is not None:
        offers = _degrade_best(offers, library, opts, env, room, count)
    page = await _page(env, opts, offers, room)
    _savings(page, _full_texts(library), count)
    token = _next_cursor(env, opts, page.left_out) if page.left_out else None
    return render.answer(_in_order(shaped, refless, page), head, token, missing)


def _in_order(
    shaped: Sequence[Shaped], refless: dict[int, JsonObject], page: budget.Page
) -> list[JsonObject]:
    """The wire rows to send, best first: the rows without a ref where they stand, and the
    ref rows the page admitted (its stubs included)."""
    sent = dict(zip(page.refs, page.rows, strict=True))
    kept: list[JsonObject] = []
    for position, row in enumerate(shaped):
        ref = row.ref
        if ref is None:
            kept.append(refless[position])
        elif ref in sent:
            kept.append(sent[ref])
    return kept


def _next_cursor(env: ToolEnv, opts: Options, left_out: Sequence[str]) -> str:
    refs = tuple(ref for ref in map(parse_ref, left_out) if ref is not None)
    rest = cursor.Cursor(refs, opts.full_content, opts.novel_only, opts.max_tokens)
    return cursor.issue(env.lib, binding(env, opts), rest)


async def resume(env: ToolEnv, opts: Options, token: str) -> JsonObject:
    """The next page of an earlier answer: its cursor's refs resolved by ref, shaped as it
    asked (this call's ``max_tokens`` and ``novel_only`` win when given)."""
    rest = cursor.open_cursor(env.lib, binding(env, opts), token)
    refs = [cursor.format_ref(kind, row_id) for kind, row_id in rest.refs]
    resolved = await contents.resolve(env.lib, env.caller.tenant_id, opts.agent_id, refs)
    rows = [item for _, item in resolved if item is not None]
    resumed = dataclasses.replace(
        opts,
        full_content=rest.full_content,
        max_tokens=opts.max_tokens if opts.max_tokens is not None else rest.max_tokens,
        novel_only=opts.novel_only if opts.novel_only is not None else rest.novel_only,
    )
    missing = [ref for ref, item in resolved if item is None]
    return await _deliver(env, resumed, rows, {}, missing)
