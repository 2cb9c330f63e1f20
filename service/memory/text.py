"""Write-seam normalisation shared by every write path (docs/tools.md, "Store steps";
docs/tools.md, "Source normalisation").

Pure functions: content sanitising with the length cap, source
normalisation to the canonical ``{type, id, name}`` shape, the serialised-size
measure used by the metadata/source refusal, and timestamp parsing.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime

_ANNOTATION = re.compile(r"\[Memory from [^\]]*\]\s*")
_TYPE_WORDS = {
    "user": "User",
    "agent": "Agent",
    "assistant": "Agent",
    "ai": "Agent",
    "system": "System",
    "session": "System",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Sanitised:
    """Sanitised text and whether the length cap cut it."""

    text: str
    truncated: bool


def sanitise(raw: str, max_length: int) -> Sanitised:
    """Strip ``[Memory from …]`` annotations, trim, cap at ``max_length`` code points.

    Annotations are echoes of earlier recalls that agents paste back; storing
    them would duplicate memories under a new wording (step 5 of docs/tools.md, "Store steps").
    """
    text = _ANNOTATION.sub("", raw).strip()
    if len(text) > max_length:
        return Sanitised(text[:max_length], True)
    return Sanitised(text, False)


def serialised_length(value: object) -> int:
    """Length of ``value`` as JSON with ASCII escaping (the spec's size measure)."""
    return len(json.dumps(value, ensure_ascii=True))


def _canonical_type(word: object) -> str | None:
    if not isinstance(word, str):
        return None
    return _TYPE_WORDS.get(word.strip().lower())


def _from_single_key(key: str, value: object) -> dict[str, object] | None:
    kind = _canonical_type(key)
    if kind is None:
        return None
    if isinstance(value, Mapping):
        merged: dict[str, object] = {"type": kind, "id": "", "name": ""}
        merged.update({k: v for k, v in value.items() if k in ("id", "name")})
        return merged
    if isinstance(value, str):
        return {"type": kind, "id": value, "name": "" if kind == "System" else value}
    return None


def normalise_source(source: object) -> object:
    """Fold the many historical source spellings into ``{type, id, name}``.

    ``None`` becomes ``{}``; Rust-serde single-key objects and bare type words
    are folded; anything unrecognised is returned verbatim so a health check can
    report it later.
    """
    if source is None:
        return {}
    if isinstance(source, str):
        kind = _canonical_type(source)
        return {"type": kind, "id": "", "name": ""} if kind else source
    if not isinstance(source, Mapping):
        return source
    if "type" in source:
        kind = _canonical_type(source["type"])
        if kind is None:
            return dict(source)
        return {**source, "type": kind}
    if len(source) == 1:
        ((key, value),) = source.items()
        folded = _from_single_key(str(key), value)
        if folded is not None:
            return folded
    return dict(source)


def now_timestamp() -> str:
    """Server time as ISO-8601 UTC with microseconds and ``+00:00``."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def parse_timestamp(text: str) -> datetime | None:
    """Parse an ISO-8601 string leniently; naive values are UTC; None when unparseable."""
    value = text.strip()
    if not value:
        return None
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MAX_DEPTH = 32


def _string_problem(value: str) -> str | None:
    match = _UNSTORABLE.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "text must not contain NUL characters (U+0000)"
    return "text must be valid Unicode (lone surrogate code point)"


def text_problem(value: object, depth: int = 0) -> str | None:
    """Why ``value`` cannot be stored, or None.

    Postgres text and jsonb cannot hold U+0000 and UTF-8 cannot encode lone
    surrogates; structures nested deeper than MAX_DEPTH are refused before any
    recursive serialisation can fail. Such input gets a clear message instead
    of an error from inside the database.
    """
    if isinstance(value, str):
        return _string_problem(value)
    if depth > MAX_DEPTH and isinstance(value, Mapping | list | tuple):
        return f"JSON nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, Mapping):
        items: list[object] = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return None
    for item in items:
        problem = text_problem(item, depth + 1)
        if problem:
            return problem
    return None
