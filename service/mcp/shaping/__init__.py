"""Response shaping at the MCP boundary: compact rows, previews, excerpts, refs, budgets.

The library (``service.memory``) always returns full rows; this package is the only place in
the service that trims them or enforces a response budget (docs/tools.md, "Where trimming happens").
Keeping that in one pure package means library callers (benchmarks, in-process consumers) can never
be handed a preview, and every budget rule is testable without a database.

Everything here is pure and works on the library's typed rows: a recall row becomes a
``rows.Shaped`` record (the row, where its content is cut, its excerpt), a listed row a
``listing.Listed`` record (the row and its cut). Nothing here copies text or builds a wire
dict: ``service.mcp.render`` renders each record once, into the compact row (the budget
keeps that rendering on its offer; docs/architecture.md, "The read family's seam"). No
function mutates its input or does I/O (the one exception: ``tokens.token_counter`` loads
a configured ``CPERSONA_TOKENIZER`` file once).
What needs the database or a signing key (the session ledger, cursors) is done by
``service.mcp.delivery`` around these functions.

Vocabulary shared by every function:

* *preview*: the first ``P`` code points of a text field, a pure prefix with no ellipsis.
  It must be a pure prefix because ``exclude_contents`` matches by starts-with
  (docs/tools.md, "Excluding what the caller holds"), so a preview fed back still suppresses its
  stored row.
* *markers*: ``<field>_len`` (the full length) and ``<field>_truncated: True``. They are
  present only on a row that was actually cut (docs/tools.md, "Preview tier").
* *ref*: ``mem:<id>`` / ``ep:<id>``, the handle ``get_contents`` resolves
  (docs/tools.md, "Batch budget"; docs/tools.md, "Refs"). A row is trimmed only when it
  carries a ref (recall) or gains one (list tools). Without a ref the lost tail would be
  unreachable.
* ``P <= 0`` turns the preview tier off, and with it every budget that degrades to it:
  degrading to a disabled tier would silently drop content (docs/tools.md, "Preview tier";
  docs/tools.md, "Full-content budget"; docs/tools.md, "List budgets").

Budgets count as they build (streaming-size accounting; docs/tools.md, "Where trimming happens").
Each walks the rows once, in the order the spec gives, keeps a running total and degrades rows from
the point the budget is spent. None of them builds an oversized response and cuts it afterwards.
Lengths are Unicode code points (Python ``len``), as the spec requires; ``max_tokens``
counts tokens of the compact rendering (``tokens.render`` of ``render.recall.shaped``).
"""
