"""``reconstruct``'s quoting, budget, allocation and modes: pure functions at the boundary.

The library (``service.memory.reconstruct``) returns items with full records; what an
answer shows of them — which passages, how many characters, which items fit — is decided
here, as every other trim is decided in ``service.mcp.shaping`` (docs/architecture.md).

* ``records``: the input records (:class:`Record`, :class:`Item`) the tool maps onto.
* ``divide``: blocks of a stored text, their ranking, governing ranges, ``revision``.
* ``quote``: head quotes, excerpts, and a head record's passages for the "whole" sequence.
* ``budget``: caps per position, the budget policy, which budget fields show.
* ``allocate``: the "items" and "whole" payload sequences cut to a budget, and
  ``shortfall_reason``.
* ``modes``: lite and pro, fitting the whole answer to the token cap, ``used_tokens``.
* ``counter``: the one token counter of the modes (``cl100k_base``, offline).

``service.mcp.render.quotes`` puts quotes and budget fields on the wire.

How the tool uses them, for items in item order (window, then held):

1. ``settings = QuoteSettings.of(service_settings)``; ``spent = budget.resolve(budget,
   effective_count + held, settings, mode)``.
2. Default sequence: ``heads = [budget.head_quote(item.head, query, position, settings)]``
   and ``others = [[quote.excerpt_quote(r, query, settings.excerpt_chars) for r in
   item.others]]``; ``steps = allocate.items_sequence(head lengths, excerpt lengths)``.
   Modes: ``divided = [quote.passages(item.head, query)]``, ``steps =
   allocate.whole_sequence(divided, excerpt lengths, held, pro=mode == "pro")``, a
   returned item's ``content`` is ``quote.passage_quote(divided[i], taken.passages)``.
3. ``cut = allocate.cut(steps, spent.effective, held)`` (pro uncapped: ``budget.uncapped(
   spent, breakpoints[-1])`` first); each ``Taken`` says which items, passages and
   excerpts come back; ``allocate.shortfall_reason(...)`` says why fewer did.
4. Under a mode, ``modes.fit(build, modes.MODES[mode], spent.effective, cut.breakpoints,
   claims, counter.cl100k_tokens)`` with ``build`` running steps 3 and the rendering.

Nothing here touches the database, and only ``modes`` handles a rendered answer;
everything is deterministic.
"""
