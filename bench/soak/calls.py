"""The soak's calls: the tool mix, the arguments of each call and how answers are classified.

Kinds of answer (:func:`classify`):

- ``ok`` — the tool answered with a success;
- ``refused 503 <reason>`` / ``refused 429 <reason>`` — a deliberate refusal: the JSON-RPC
  error the service sends with ``Retry-After`` when a lane is full, the database is
  busy or down (code -32003) or a key is over its rate or concurrency limit (-32029);
- anything else is a real error: ``tool_error`` (``isError``), ``tool_failed`` (a
  success-shaped answer with ``ok: false`` or ``error``), ``rpc_error <code>``,
  ``transport <exception>``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from bench.corpora.texts import TextSource

CALL_TIMEOUT_S = 60.0
UNAVAILABLE_CODE = -32003
LIMITED_CODE = -32029
MIX: tuple[tuple[str, float], ...] = (
    ("store", 0.30),
    ("recall", 0.30),
    ("get_contents", 0.15),
    ("list_memories", 0.15),
    ("archive_episode", 0.10),
)
REMEMBERED = 64


@dataclasses.dataclass(frozen=True)
class Outcome:
    tool: str
    kind: str
    seconds: float
    ended: float  # time.monotonic() when the answer came
    retry_after: float = 0.0  # what a refusal asked for

    @property
    def served(self) -> bool:
        return self.kind == "ok"

    @property
    def deliberate(self) -> bool:
        return self.kind.startswith("refused ")


@dataclasses.dataclass
class Tally:
    """Every outcome of a run, and the facts around it."""

    started: float
    ended: float = 0.0
    outcomes: list[Outcome] = dataclasses.field(default_factory=list)
    rss_mib: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    killed_at: float | None = None
    cpu_seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)


class ClientState:
    """What one client remembers to build its next call: texts it stored, refs it got."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.agent = f"soak-{number}"
        self.rng = random.Random(number)
        self.texts = TextSource(seed=number)
        self.stored: list[str] = []
        self.refs: list[str] = []
        self.sequence = 0
        self.pending_text = ""  # the text of the store in flight

    def pick_tool(self) -> str:
        tool = self.rng.choices([name for name, _ in MIX], [weight for _, weight in MIX])[0]
        return "store" if tool in ("recall", "get_contents") and not self.refs else tool

    def remember(self, text: str, ref: str | None) -> None:
        self.stored = [*self.stored, text][-REMEMBERED:]
        if ref is not None:
            self.refs = [*self.refs, ref][-REMEMBERED:]


def _store_args(state: ClientState) -> dict[str, Any]:
    state.sequence += 1
    text = state.texts.next("short" if state.rng.random() < 0.7 else "medium")
    state.pending_text = text
    message = {
        "id": f"c{state.number}-{state.sequence}",
        "content": text,
        "source": {"type": "User", "id": "u1", "name": "Ann"},
    }
    return {"agent_id": state.agent, "message": message}


def _recall_args(state: ClientState) -> dict[str, Any]:
    words = state.rng.choice(state.stored).split()
    start = state.rng.randrange(max(1, len(words) - 3))
    return {"agent_id": state.agent, "query": " ".join(words[start : start + 3]), "limit": 10}


def _contents_args(state: ClientState) -> dict[str, Any]:
    count = min(len(state.refs), state.rng.randint(1, 5))
    return {"agent_id": state.agent, "refs": state.rng.sample(state.refs, count)}


def _list_args(state: ClientState) -> dict[str, Any]:
    return {"agent_id": state.agent, "limit": 20}


def _episode_args(state: ClientState) -> dict[str, Any]:
    return {"agent_id": state.agent, "summary": state.texts.next("short")}


ARGUMENTS: dict[str, Callable[[ClientState], dict[str, Any]]] = {
    "store": _store_args,
    "recall": _recall_args,
    "get_contents": _contents_args,
    "list_memories": _list_args,
    "archive_episode": _episode_args,
}


def rpc_error_kind(code: object, data: object) -> str:
    """The kind of a JSON-RPC error: a deliberate refusal by its code and ``data.reason``
    (``docs/reliability.md``, "Refusals at a glance"), else ``rpc_error <code>``."""
    reason = data.get("reason", "?") if isinstance(data, dict) else "?"
    if code == UNAVAILABLE_CODE:
        return f"refused 503 {reason}"
    if code == LIMITED_CODE:
        return f"refused 429 {reason}"
    return f"rpc_error {code}"


def classify_error(exc: BaseException) -> str:
    """The kind of a call that raised: a deliberate refusal or a real error."""
    if isinstance(exc, MCPError):
        return rpc_error_kind(exc.code, exc.data)
    return f"transport {type(exc).__name__}"


def retry_after_of(exc: BaseException) -> float:
    """The ``retry_after`` a refusal carries (0 when none)."""
    data = exc.data if isinstance(exc, MCPError) else None
    value = data.get("retry_after") if isinstance(data, dict) else None
    return float(value) if isinstance(value, int | float) else 0.0


def classify_result(result: types.CallToolResult) -> tuple[str, dict[str, Any]]:
    """The kind of a tool result and its JSON body."""
    texts = [item.text for item in result.content if isinstance(item, types.TextContent)]
    try:
        body = json.loads("".join(texts))
    except ValueError:
        return "tool_error", {}
    if not isinstance(body, dict):
        return "tool_error", {}
    if result.is_error:
        return "tool_error", body
    if "error" in body or body.get("ok") is False:
        return "tool_failed", body
    return "ok", body


def _learn(state: ClientState, tool: str, body: dict[str, Any]) -> None:
    if tool == "store" and body.get("result") == "stored":
        state.remember(state.pending_text, f"mem:{body['id']}")


async def one_call(session: ClientSession, state: ClientState) -> Outcome:
    """Pick a tool, call it once, classify the answer."""
    tool = state.pick_tool()
    args = ARGUMENTS[tool](state)
    started = time.monotonic()
    try:
        result = await session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT_S)
    except Exception as exc:  # an answer to classify, never a crash of the soak
        kind, seconds = classify_error(exc), time.monotonic() - started
        return Outcome(tool, kind, seconds, time.monotonic(), retry_after_of(exc))
    kind, body = classify_result(result)
    if kind == "ok":
        _learn(state, tool, body)
    return Outcome(tool, kind, time.monotonic() - started, time.monotonic())
