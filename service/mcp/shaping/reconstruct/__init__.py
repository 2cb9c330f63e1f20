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

Nothing here touches the database or builds a wire dict; everything is deterministic.
"""
