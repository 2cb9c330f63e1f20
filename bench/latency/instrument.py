"""Timers wrapped around the service's functions, in a ``serve`` process of a benchmark.

Nothing in ``service/`` knows about this: :mod:`bench.latency.hook.sitecustomize` (on
``PYTHONPATH`` of the ``serve`` the benchmark starts, with ``BENCH_PHASES_OUT`` set) calls
:func:`install` before ``python -m service serve`` runs, and every request then writes one
JSON line to that file: the tool it called and the intervals of the wrapped functions
(:mod:`bench.latency.phases` names and attributes them). A function is wrapped where it is
defined and wherever a module bound it by ``from ... import``; methods on their class.
The cost, a few microseconds per wrapped call, is inside the measured time.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

ENV_OUT = "BENCH_PHASES_OUT"

_record: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "bench_phase_record", default=None
)
_lock = threading.Lock()


def _timed(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` adding ``(phase, start, end)`` to the current request's record."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            record = _record.get()
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                if record is not None:
                    record["intervals"].append((phase, start, time.perf_counter()))

        return timed_async

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        record = _record.get()
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if record is not None:
                record["intervals"].append((phase, start, time.perf_counter()))

    return timed


def _wrap_function(module: str, name: str, phase: str) -> None:
    """Wrap ``module.name`` and every ``service`` module's binding of the same object."""
    __import__(module)
    original = getattr(sys.modules[module], name)
    wrapped = _timed(phase, original)
    for loaded_name, loaded in list(sys.modules.items()):
        if loaded_name.startswith("service") or loaded_name == module:
            for attr, value in list(vars(loaded).items()):
                if value is original:
                    setattr(loaded, attr, wrapped)


def _wrap_method(cls: type, name: str, phase: str) -> None:
    setattr(cls, name, _timed(phase, getattr(cls, name)))


def statement_label(query: object, names: dict[str, str]) -> str:
    """A statement's name for the breakdown's list of round trips: the named query's name
    (``names``: text to name) when it is one, else its first words (``BEGIN``, ``COMMIT``)."""
    text = str(query)
    return names.get(text) or " ".join(text.split()[:3])[:60]


def _sql(method: str) -> None:
    """asyncpg's ``method`` timed as "sql", its statement named in the record."""
    import asyncpg

    from service.db.sql import QUERIES

    names = {text: name for name, text in QUERIES.items()}
    cls = asyncpg.connection.Connection
    timed = _timed("sql", getattr(cls, method))

    async def labelled(self: Any, query: object, *args: Any, **kwargs: Any) -> Any:
        record = _record.get()
        if record is not None:
            record.setdefault("statements", []).append(statement_label(query, names))
        return await timed(self, query, *args, **kwargs)

    setattr(cls, method, labelled)


def _edge(out: IO[str]) -> None:
    """The request's record starts and ends with the edge's ``__call__``."""
    from service.app.edge import Edge

    original = Edge.__call__

    async def call(self: Any, scope: Any, receive: Any, send: Any) -> None:
        record: dict[str, Any] = {"tool": None, "intervals": []}
        token = _record.set(record)
        start = time.perf_counter()
        try:
            await original(self, scope, receive, send)
        finally:
            record["intervals"].append(
                ("edge (host check, guard, log)", start, time.perf_counter())
            )
            _record.reset(token)
            with _lock:
                out.write(json.dumps(record) + "\n")
                out.flush()

    Edge.__call__ = call  # type: ignore[method-assign]


def _dispatcher() -> None:
    """The dispatcher's call names the tool; its checks are its own time."""
    from service.mcp.server import Dispatcher

    original = Dispatcher.call

    async def call(self: Any, name: str, arguments: Any) -> Any:
        record = _record.get()
        if record is not None:
            record["tool"] = name
        return await original(self, name, arguments)

    Dispatcher.call = _timed("tool checks (dispatcher)", call)  # type: ignore[method-assign]
    _wrap_method(Dispatcher, "_account", "token accounting")


def _transport() -> None:
    import asyncpg
    import pydantic
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    from service.app.edge import Edge

    _wrap_method(StreamableHTTPASGIApp, "__call__", "SDK request handling")
    _wrap_method(Edge, "_authenticate", "authentication")
    _wrap_method(Edge, "_admitted", "admission (limits, body, lane)")
    _wrap_method(pydantic.BaseModel, "model_dump_json", "JSON encoding (SDK response)")
    for method in ("execute", "executemany", "fetch", "fetchrow", "fetchval"):
        _sql(method)
    _wrap_method(asyncpg.pool.Pool, "_acquire", "pool acquire")


def _library() -> None:
    from service.embeddings import batcher

    _wrap_function("service.mcp.server", "_text_result", "JSON encoding (tool body)")
    _wrap_function("jsonschema.exceptions", "best_match", "schema validation")
    _wrap_function("service.memory.recall.pipeline", "recall", "library (other Python)")
    _wrap_function("service.memory.memories.store", "store", "library (other Python)")
    _wrap_function("service.memory.recall.rank", "rank", "ranking")
    _wrap_function("service.mcp.delivery", "deliver", "rendering")
    _wrap_function("service.embeddings.cache", "embed_query", "embedding")
    _wrap_method(batcher.EmbeddingBatcher, "embed", "embedding")


def install(path: str) -> None:
    """Wrap the phases' functions; each request's record goes to ``path`` (JSON lines)."""
    import service.app.factory
    import service.mcp.tools  # noqa: F401

    out = open(path, "a", encoding="utf-8")  # noqa: SIM115  (open for the process's life)
    _edge(out)
    _dispatcher()
    _transport()
    _library()
