"""One abusive key beside the soak's well-behaved tenants (issue #36's reliability soak).

The abuser is one more tenant, whose key misbehaves for the whole run in four ways, each
with its own number of workers (``--abuse large=4,flood=48,bogus=8,stall=6``; 0 turns a
behaviour off, so each can be run alone to attribute an effect):

- ``large`` — queries at the caps of ``docs/reliability.md`` ("Input bounds"): ``recall``
  with a 16,000-character query, ``limit`` 100 and ``full_content``, and
  ``recall_with_context`` with 100 turns of 16,000 characters (a 1.6 MB body);
- ``flood`` — cheap ``list_memories`` calls far beyond the key's concurrency cap;
- ``bogus`` — requests with keys from a pool of made-up ones;
- ``stall`` — export downloads (``GET /v1/files/<token>`` of a file ``export_memories``
  wrote, and ``GET /v1/export?include_embeddings=true``, alternately) that read the head
  and then 1 KiB every 10 s, holding the connection until the server gives up on it.

None of them honours ``Retry-After``: after a refusal a worker pauses ``REFUSED_PAUSE_S``
(5 ms) only, so that the load generator, which shares the machine, does not spin. The
abuser talks plain HTTP (``httpx``, no MCP session: the endpoint is stateless) from its
own loopback address (``--abuser-address``, default 127.0.0.2), as a client elsewhere on
the network would, and its answers are tallied apart from the well-behaved clients'.
Before the run it stores ``--abuse-corpus`` memories of 16,000 characters, so its
recalls search long texts and its exports are larger than the sockets' buffers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import mcp_types as types

from bench.corpora.texts import TextSource
from bench.harness.serving import BenchError
from bench.soak.calls import Outcome, Tally, classify_result, rpc_error_kind

BEHAVIOURS = ("large", "flood", "bogus", "stall")
DEFAULT_WORKERS = {"large": 4, "flood": 48, "bogus": 8, "stall": 6}
QUERY_CAP = 16_000  # service/memory/bounds.py: query text and turn content
CONTEXT_TURNS = 100  # the list cap of external_context
REFUSED_PAUSE_S = 0.005
STALL_READ_BYTES = 1024
STALL_READ_EVERY_S = 10.0
STALL_HOLD_S = 120.0
HEAD_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 60.0
BOGUS_KEYS = 1000
QUEUE_WAIT_S = 300.0
STORE_TRIES = 10
EXPORT_NAME = "soak-abuse.jsonl"
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def parse_workers(text: str) -> dict[str, int]:
    """``large=4,flood=48`` as workers per behaviour; behaviours not named get 0."""
    workers = dict.fromkeys(BEHAVIOURS, 0)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, count = item.partition("=")
        if name not in workers or not sep or not count.isdigit():
            raise ValueError(f"expected BEHAVIOUR=COUNT of {', '.join(BEHAVIOURS)}; got {item!r}")
        workers[name] = int(count)
    if not any(workers.values()):
        raise ValueError("at least one behaviour needs a worker")
    return workers


def tool_call(tool: str, arguments: dict[str, Any], number: int = 1) -> bytes:
    """A JSON-RPC ``tools/call`` request body."""
    params = {"name": tool, "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
    return json.dumps(body).encode()


def rpc_body(content_type: str, text: str) -> dict[str, Any] | None:
    """The JSON-RPC message of an answer, sent as JSON or as one server-sent event."""
    if content_type.startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def classify_reply(status: int, body: dict[str, Any] | None) -> str:
    """The kind of a plain-HTTP answer, in the soak's vocabulary (:mod:`bench.soak.calls`):
    ``ok``, ``refused <status> <reason>`` (429/503, by the JSON-RPC error or the JSON
    body's ``reason``), ``unauthorized`` (401), else ``http <status>`` or the tool's
    failure kinds."""
    error = body.get("error") if body is not None else None
    if isinstance(error, dict) and "code" in error:
        return rpc_error_kind(error["code"], error.get("data"))
    if status in (429, 503):
        reason = body.get("reason", "?") if body is not None else "?"
        return f"refused {status} {reason}"
    if status == 401:
        return "unauthorized"
    if status != 200 or body is None:
        return f"http {status}"
    if "result" not in body:
        return "ok"  # a non-tool answer (a download's JSON, say)
    try:
        result = types.CallToolResult.model_validate(body["result"])
    except ValueError:
        return "tool_error"
    return classify_result(result)[0]


def status_of_head(head: bytes) -> int:
    """The status code of a raw HTTP response head (0 when it is not one)."""
    parts = head.split(b"\r\n", 1)[0].split()
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0


def long_text(seed: int, size: int = QUERY_CAP) -> str:
    """``size`` characters of the benchmark's sentences (deterministic by ``seed``)."""
    texts, parts, length = TextSource(seed=seed), [], 0
    while length < size:
        parts.append(texts.next("medium"))
        length += len(parts[-1]) + 1
    return " ".join(parts)[:size]


def large_bodies(agent: str, seed: int) -> list[bytes]:
    """The large calls, built once (the generator must not spend the CPU it measures)."""
    query = long_text(seed)
    turns = [
        {"role": "user" if n % 2 else "assistant", "content": long_text(seed + n + 1)}
        for n in range(CONTEXT_TURNS)
    ]
    recall = {"agent_id": agent, "query": query, "limit": 100, "full_content": True}
    return [
        tool_call("recall", recall),
        tool_call("recall_with_context", {**recall, "external_context": turns}),
    ]


@dataclasses.dataclass
class Abuser:
    """The abusive tenant's key, where it calls from, and what it has set up."""

    base_url: str
    key: str
    address: str
    workers: dict[str, int]
    agent: str = "abuser"
    download_path: str = ""

    def client(self, connections: int) -> httpx.AsyncClient:
        """An HTTP client bound to the abuser's own address."""
        transport = httpx.AsyncHTTPTransport(
            local_address=self.address,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=0),
        )
        return httpx.AsyncClient(transport=transport, timeout=HTTP_TIMEOUT_S)

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {**HEADERS, "authorization": f"Bearer {key or self.key}"}


async def post(
    http: httpx.AsyncClient, abuser: Abuser, body: bytes, key: str | None = None
) -> tuple[str, dict[str, Any] | None]:
    """One ``/mcp`` call: its kind and JSON-RPC body; a transport failure is a kind too."""
    try:
        reply = await http.post(f"{abuser.base_url}/mcp", content=body, headers=abuser.headers(key))
    except httpx.HTTPError as exc:
        return f"transport {type(exc).__name__}", None
    parsed = rpc_body(reply.headers.get("content-type", ""), reply.text)
    return classify_reply(reply.status_code, parsed), parsed


async def prepare(abuser: Abuser, corpus: int) -> None:
    """Store the abuser's long memories (a refused store is sent again), wait until the
    embedding queue is empty (so no backlog of the set-up runs into the measured time),
    then export them to a file to download."""
    async with abuser.client(8) as http:
        numbers = iter(range(corpus))

        async def storer() -> None:
            for n in numbers:
                message = {"id": f"a{n}", "content": long_text(10_000 + n)}
                body = tool_call("store", {"agent_id": abuser.agent, "message": message})
                for _ in range(STORE_TRIES):
                    if not (await post(http, abuser, body))[0].startswith("refused "):
                        break
                    await asyncio.sleep(1.0)

        await asyncio.gather(*(storer() for _ in range(4)))
        await _queue_empty(http, abuser)
        arguments = {"agent_id": abuser.agent, "output_path": EXPORT_NAME}
        kind, body = await post(http, abuser, tool_call("export_memories", arguments))
    url = _tool_json(body).get("download_url", "")
    if kind != "ok" or not url:
        raise BenchError(f"the abuser's export failed: {kind} {body}")
    abuser.download_path = urlsplit(url).path


async def _queue_empty(http: httpx.AsyncClient, abuser: Abuser) -> None:
    deadline = time.monotonic() + QUEUE_WAIT_S
    while time.monotonic() < deadline:
        _, body = await post(http, abuser, tool_call("get_queue_status", {}))
        if _tool_json(body).get("pending") == 0:
            return
        await asyncio.sleep(1.0)
    raise BenchError(f"the embedding queue was not empty after {QUEUE_WAIT_S:.0f} s")


def _tool_json(body: dict[str, Any] | None) -> dict[str, Any]:
    content = (body or {}).get("result", {}).get("content", [])
    text = "".join(item.get("text", "") for item in content if isinstance(item, dict))
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


Call = Callable[[int], Awaitable[str]]


async def _loop(behaviour: str, call: Call, deadline: float, tally: Tally) -> None:
    """Call back to back until ``deadline``, pausing only ``REFUSED_PAUSE_S`` after a refusal."""
    for n in itertools.count():
        if time.monotonic() >= deadline:
            return
        started = time.monotonic()
        kind = await call(n)
        tally.add(Outcome(behaviour, kind, time.monotonic() - started, time.monotonic()))
        if kind != "ok":
            await asyncio.sleep(REFUSED_PAUSE_S)


async def _stall(abuser: Abuser, path: str, deadline: float) -> str:
    """One download read as slowly as ``STALL_READ_BYTES`` per ``STALL_READ_EVERY_S``,
    held until the server ends it, ``STALL_HOLD_S`` passes or the run ends; its kind."""
    url = urlsplit(abuser.base_url)
    try:
        reader, writer = await asyncio.open_connection(
            url.hostname, url.port, local_addr=(abuser.address, 0)
        )
    except OSError as exc:
        return f"transport {type(exc).__name__}"
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {abuser.key}\r\n\r\n"
    )
    try:
        writer.write(request.encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        status = status_of_head(head)
        until = min(time.monotonic() + STALL_HOLD_S, deadline)
        while status == 200 and time.monotonic() < until:
            await asyncio.sleep(STALL_READ_EVERY_S)
            if not await reader.read(STALL_READ_BYTES):
                break
        if status == 200:
            return "ok"
        text = (await asyncio.wait_for(reader.read(4096), HEAD_TIMEOUT_S)).decode(errors="replace")
        return classify_reply(status, rpc_body("application/json", text))
    except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
        return f"transport {type(exc).__name__}"
    finally:
        writer.close()


def _calls(
    abuser: Abuser, http: httpx.AsyncClient, deadline: float
) -> dict[str, Callable[[int], Call]]:
    """For each behaviour: worker number → the call a worker repeats."""
    large = large_bodies(abuser.agent, seed=7)
    cheap = tool_call("list_memories", {"agent_id": abuser.agent, "limit": 20})
    fakes = [f"cpk_{secrets.token_hex(20)}" for _ in range(BOGUS_KEYS)]
    paths = [abuser.download_path, "/v1/export?include_embeddings=true"]

    async def first(body: bytes, key: str | None = None) -> str:
        return (await post(http, abuser, body, key))[0]

    return {
        "large": lambda w: lambda n: first(large[(w + n) % len(large)]),
        "flood": lambda w: lambda n: first(cheap),
        "bogus": lambda w: lambda n: first(cheap, fakes[(w * 7919 + n) % len(fakes)]),
        "stall": lambda w: lambda n: _stall(abuser, paths[w % len(paths)], deadline),
    }


async def abuse(abuser: Abuser, deadline: float, tally: Tally) -> None:
    """Run every behaviour's workers until ``deadline``."""
    connections = sum(abuser.workers.values()) + 4
    async with abuser.client(connections) as http:
        calls = _calls(abuser, http, deadline)
        await asyncio.gather(
            *(
                _loop(behaviour, calls[behaviour](w), deadline, tally)
                for behaviour, count in abuser.workers.items()
                for w in range(count)
            )
        )


def run_abuse(abuser: Abuser, deadline: float) -> tuple[list[Outcome], float]:
    """:func:`abuse` in a process of its own (its entry point): the outcomes and the CPU
    seconds the process spent. ``deadline`` is ``time.monotonic()``, one clock for every
    process of the machine."""
    tally = Tally(started=time.monotonic())
    asyncio.run(abuse(abuser, deadline, tally))
    return tally.outcomes, time.process_time()
