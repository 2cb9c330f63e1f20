"""How answers are rendered and how their tokens are counted.

Every tool answer is one JSON text (docs/tools.md, "Answers and failures") rendered by
:func:`render`: compact separators (no space after ``,`` and ``:``; any JSON parser reads it)
and no ASCII escaping. Budgets that count tokens count this exact rendering.

Tokens are ``ceil(chars / 4)`` — the usual rule of thumb for English and JSON — unless
``CPERSONA_TOKENIZER`` names a Hugging Face ``tokenizer.json`` (it needs the
``tokenizers`` package of the ``local`` extra), whose encoding is then counted.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Final

from service.errors import ConfigError

TokenCounter = Callable[[str], int]
CHARS_PER_TOKEN: Final = 4


def render(value: object) -> str:
    """The JSON text of a tool answer (or of one row, for budgets)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chars4(text: str) -> int:
    """One token per four characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def tokens_of_chars(chars: int) -> int:
    """The chars/4 estimate for a character count (metering of text no longer at hand)."""
    return math.ceil(max(chars, 0) / CHARS_PER_TOKEN)


@functools.lru_cache(maxsize=4)
def _tokenizer_counter(path: str) -> TokenCounter:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ConfigError(
            "CPERSONA_TOKENIZER: counting with a tokenizer needs the 'tokenizers' package "
            "(pip install 'cpersona-service[local]')"
        ) from None
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as exc:  # the library raises its own untyped exceptions
        raise ConfigError(f"CPERSONA_TOKENIZER: cannot load {path}: {exc}") from None
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count


def token_counter(tokenizer: Path | None) -> TokenCounter:
    """The configured counter: chars/4, or the tokenizer in ``tokenizer`` (loaded once)."""
    return chars4 if tokenizer is None else _tokenizer_counter(str(tokenizer))
