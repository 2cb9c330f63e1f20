"""A bounded, seeded generator of hostile requests, and the log check of the fuzz tests.

Arguments come from each tool's JSON schema (so most calls get past validation and
reach the handlers) with hostile values mixed in: wrong types, huge strings, deep
nesting, control characters, lone surrogates, numbers out of every range, NaN. The
same seed gives the same requests, so a failure reproduces.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

DEEP = "__deeply_nested_json__"
"""A string value the request encoder replaces with JSON nested 3000 levels deep."""
DEEP_JSON = "[" * 3000 + "]" * 3000
HUGE = "h" * 200_000
HOSTILE_STRINGS: list[Any] = [
    "",
    " ",
    "\x00",
    "nul\x00inside",
    "\r\n",
    "line\r\nset-cookie: x=1",
    "\x1b[31mred",
    "\u202eright-to-left",
    "\ud800lonely",
    "\U0001f9e0" * 50,
    "a" * 300,
    HUGE,
    "'; DROP TABLE memories; --",
    "%_\\",
    "../../etc/passwd",
    "mem:-1",
    "ep:99999999999999999999",
    DEEP,
]
HOSTILE_VALUES: list[Any] = [
    None,
    0,
    -1,
    2**70,
    -(2**70),
    1.5,
    float("nan"),
    float("inf"),
    True,
    [],
    {},
    ["x"],
    {"a": 1},
    [[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]],
]
PLAIN_STRINGS = ["a", "agent-1", "b", "mem:1", "ep:1", "some words", "x.jsonl", "all"]


def assert_quiet(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    """Nothing logged a traceback, a failed request or a failed tool (stdlib or structlog)."""
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    for sign in ("Traceback", "edge_failed", "tool_failed", "Exception in ASGI application"):
        assert sign not in logged, logged[-4000:]
    assert not [record for record in caplog.records if record.exc_info], caplog.text[-4000:]


def encode(payload: Any) -> bytes:
    """JSON of ``payload`` (NaN and Infinity as Python writes them: invalid JSON), with
    every :data:`DEEP` string replaced by 3000 levels of nesting."""
    return json.dumps(payload).replace(f'"{DEEP}"', DEEP_JSON).encode()


class Fuzzer:
    """Seeded values: valid-looking ones from a schema, hostile ones from the lists."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def hostile(self) -> Any:
        return self.rng.choice([*HOSTILE_STRINGS, *HOSTILE_VALUES])

    def string(self) -> str:
        pool = PLAIN_STRINGS if self.rng.random() < 0.7 else HOSTILE_STRINGS
        return str(self.rng.choice(pool))

    def value(self, schema: dict[str, Any], depth: int = 0) -> Any:
        """A value for ``schema``: mostly of its type, one time in four hostile."""
        if depth > 3 or self.rng.random() < 0.25:
            return self.hostile()
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.rng.choice(kind)
        return self._typed(str(kind), schema, depth)

    def _typed(self, kind: str, schema: dict[str, Any], depth: int) -> Any:
        if kind == "string":
            return self.string()
        if kind in ("integer", "number"):
            low, high = schema.get("minimum", -5), schema.get("maximum", 100)
            value = self.rng.choice([low, high, low - 1, high + 1, self.rng.randint(low, high)])
            return value if kind == "integer" else value + self.rng.random()
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            count = self.rng.randint(0, min(4, schema.get("maxItems", 4) + 1))
            return [self.value(schema.get("items", {}), depth + 1) for _ in range(count)]
        if kind == "object":
            return self.arguments(schema, depth + 1)
        return self.hostile()

    def arguments(self, schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        """An object for ``schema``: each property given (or hostile) or left out."""
        args: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            if name in schema.get("required", []) or self.rng.random() < 0.6:
                args[name] = self.value(prop, depth)
        if self.rng.random() < 0.1:
            args["unexpected"] = self.hostile()
        return args
