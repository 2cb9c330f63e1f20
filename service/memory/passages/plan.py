"""Which passages the queue builds for the rows it embeds (docs/architecture.md,
"Passages").

The queue worker and the write-behind embed a row's text and, in the same provider
call, its passages; this module says where they are. Passages are sized by the
embedder's own tokenizer when it has one (the local model), else by an estimate of a
wordpiece tokenization over a 254-token window. A text whose characters fit the window
cannot hold more tokens than that and is not even measured."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from service.embeddings.base import tokenized
from service.memory.library import Library
from service.memory.passages.divider import Span, divide, pseudo_token_ends

ESTIMATED_WINDOW = 254
"""Tokens per passage for an embedder that exposes no tokenizer (the local model's
window less its special tokens; an HTTP model's window is at least that)."""


def window_chars(lib: Library) -> int:
    """The most characters a text can have and still fit one window for sure (a token
    covers at least one character): longer ones are measured and may get passages."""
    measure = None if lib.embedder is None else tokenized(lib.embedder)
    return ESTIMATED_WINDOW if measure is None else measure.token_window


def may_need_passages(lib: Library, text: str) -> bool:
    """Whether a row of ``text`` may get passages: passages on, an embedder, and a text
    longer than :func:`window_chars`. A row stored with an inline vector still needs its
    queue job then, which divides it (the write path never does)."""
    if lib.embedder is None or not lib.settings.passages_enabled:
        return False
    return len(text) > window_chars(lib)


async def plan(lib: Library, texts: Sequence[str]) -> list[list[Span]]:
    """The passages of each text: none when passages are off (CPERSONA_PASSAGES) or the
    text fits one window. The division runs in a thread, off the event loop."""
    spans: list[list[Span]] = [[] for _ in texts]
    if lib.embedder is None or not lib.settings.passages_enabled:
        return spans
    measure = tokenized(lib.embedder)
    window = window_chars(lib)
    long = [position for position, text in enumerate(texts) if len(text) > window]
    if not long:
        return spans
    ends: list[list[int]] | None = None
    if measure is not None:
        ends = await measure.token_ends([texts[position] for position in long])
    divided = await asyncio.to_thread(_divide_all, [texts[p] for p in long], ends, window)
    for position, passages in zip(long, divided, strict=True):
        spans[position] = passages
    return spans


def _divide_all(texts: list[str], ends: list[list[int]] | None, window: int) -> list[list[Span]]:
    """Each text divided; ``ends`` None: measured by the estimate."""
    measured = ends if ends is not None else [pseudo_token_ends(text) for text in texts]
    return [
        divide(text, text_ends, window) for text, text_ends in zip(texts, measured, strict=True)
    ]
