"""HTTP endpoints for moving memory in bulk, authenticated like ``/mcp``.

- ``GET /v1/export[?agent_id=…&include_embeddings=…]``: the JSONL export, streamed as
  it is read (flat memory, backpressure from the socket; a client that goes away
  stops the export).
- ``POST /v1/import[?target_agent_id=…&dry_run=…]``: a JSONL body, parsed while it
  arrives and imported in one transaction; answers the import's JSON result
  (200, or 422 when the file was inconsistent and everything was rolled back).
- ``POST /v1/files/<name>``: upload a file into the caller's export area (for
  ``import_memories``). ``GET /v1/files/<token>``: download a file through the
  signed URL an export returned; only for a key of the same tenant.

Bodies above ``CPERSONA_MAX_IMPORT_BYTES`` get 413: at once from Content-Length,
or as soon as the streamed count passes the limit (nothing is kept). Grants are
the tools' (spec §9.2): export and import need read-write on the agent (``*``
when none is named); an upload needs read-write on some agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from service.errors import InvalidInput, NotFound
from service.logs import get_logger
from service.mcp import acl, request
from service.memory import pauses, tenants, text
from service.memory.library import Library
from service.memory.portability import export, files, import_, signing
from service.models import Caller, Permission

log = get_logger("service.request")
JsonObject = dict[str, Any]
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")
JSONL = b"application/x-ndjson"


class ClientGone(Exception):
    """The client disconnected; stop working for it."""


class Call:
    """One authenticated request: its ASGI triple, caller, library, and bookkeeping."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, lib: Library) -> None:
        self.scope, self.receive, self.lib = scope, receive, lib
        self._send = send
        self.info = request.RequestInfo(request_id=uuid.uuid4().hex[:16])
        self.status: int | None = None
        self.bytes_out = 0
        self.request = Request(scope, receive)

    @property
    def caller(self) -> Caller:
        assert self.info.caller is not None
        return self.info.caller

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            headers = [
                *message.get("headers", []),
                (b"x-request-id", self.info.request_id.encode()),
            ]
            message = {**message, "headers": headers}
        elif message["type"] == "http.response.body":
            self.bytes_out += len(message.get("body", b""))
        await self._send(message)

    async def json(
        self, status: int, body: JsonObject, headers: dict[str, str] | None = None
    ) -> None:
        await JSONResponse(body, status, headers)(self.scope, self.receive, self.send)

    async def start_stream(self, headers: list[tuple[bytes, bytes]]) -> None:
        await self.send({"type": "http.response.start", "status": 200, "headers": headers})

    async def chunk(self, data: bytes, more: bool = True) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": more})

    def content_length(self) -> int | None:
        value = self.request.headers.get("content-length")
        return int(value) if value is not None and value.isdigit() else None


Handler = Callable[[Call], Awaitable[None]]


@dataclasses.dataclass(frozen=True)
class EdgeConfig:
    lib: Library
    anonymous: Caller | None
    security: TransportSecurityMiddleware


class PortabilityEdge:
    """ASGI app of one endpoint: the Host/Origin checks of /mcp (DNS-rebinding protection),
    bearer auth (401 like /mcp), request id, one log line."""

    def __init__(self, handler: Handler, config: EdgeConfig, route: str):
        self._handler, self._config, self._route = handler, config, route
        self._lib, self._anonymous = config.lib, config.anonymous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = Call(scope, receive, send, self._lib)
        token = request.current_request.set(call.info)
        started = time.perf_counter()
        try:
            refusal = await self._config.security.validate_request(call.request, is_post=False)
            if refusal is not None:
                await refusal(scope, receive, call.send)
                return
            call.info.caller = await self._authenticate(call)
            if call.info.caller is None:
                await call.json(401, {"error": "unauthorized"}, {"www-authenticate": "Bearer"})
            else:
                await self._handler(call)
        finally:
            request.current_request.reset(token)
            self._log(call, time.perf_counter() - started)

    async def _authenticate(self, call: Call) -> Caller | None:
        """The key's caller (None: unknown key); without a bearer key, the anonymous
        caller when unauthenticated HTTP is allowed (as on /mcp)."""
        scheme, _, key = call.request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and key.strip():
            return await tenants.authenticate(self._lib.db, key.strip())
        return self._anonymous

    def _log(self, call: Call, seconds: float) -> None:
        caller = call.info.caller
        log.info(
            "request",
            request_id=call.info.request_id,
            method=call.scope.get("method"),
            path=self._route,  # never the token or file name
            status=call.status,
            tenant=caller.tenant_slug if caller else None,
            key_id=caller.key_id if caller else None,
            outcome=call.info.outcome,
            bytes_out=call.bytes_out,
            duration_ms=round(seconds * 1000, 2),
        )


def _flag(value: str | None) -> bool | None:
    lowered = (value or "").strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _agent_problem(lib: Library, name: str, agent: str) -> str | None:
    if len(agent) > lib.settings.max_axis_length:
        return f"{name} too long ({len(agent)} chars, max {lib.settings.max_axis_length})"
    return text.text_problem(agent)


async def _refused(call: Call, agent: str, required: Permission) -> bool:
    """Answer 403 (the tools' permission_denied body) unless the caller's grants allow."""
    target = agent or acl.SWEEP
    if acl.allows(call.caller.grants, target, required):
        return False
    body = {
        "ok": False, "error": "permission_denied", "endpoint": call.scope.get("path"),
        "agent_id": target, "required": required,
        "client_id": call.caller.label or call.caller.key_id,
    }  # fmt: skip
    await call.json(403, body)
    return True


async def _too_large(call: Call) -> bool:
    """413 at once when the declared length is over the import limit."""
    limit = call.lib.settings.max_import_bytes
    length = call.content_length()
    if length is None or length <= limit:
        return False
    await call.json(413, {"error": f"request body too large (max {limit} bytes)"})
    return True


async def _body(call: Call) -> AsyncGenerator[bytes, None]:
    """The request body as it arrives; ClientGone if the client disconnects first."""
    while True:
        message = await call.receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        if body := message.get("body", b""):
            yield body
        if not message.get("more_body", False):
            return


async def export_endpoint(call: Call) -> None:
    agent = call.request.query_params.get("agent_id", "")
    embeddings = _flag(call.request.query_params.get("include_embeddings"))
    problem = _agent_problem(call.lib, "agent_id", agent)
    if embeddings is None or problem:
        await call.json(400, {"error": problem or "include_embeddings must be true or false"})
        return
    if await _refused(call, agent, "read-write"):
        return
    headers = [
        (b"content-type", JSONL),
        (b"cache-control", b"no-store"),
        (b"content-disposition", b'attachment; filename="cpersona-export.jsonl"'),
    ]
    await _stream_export(call, export.ExportRequest(agent, embeddings), headers)


async def _stream_export(
    call: Call, request: export.ExportRequest, headers: list[tuple[bytes, bytes]]
) -> None:
    gone = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(call, gone))
    started = False

    async def sink(data: bytes) -> None:
        nonlocal started
        if gone.is_set():
            raise ClientGone
        if not started:
            await call.start_stream(headers)
            started = True
        await call.chunk(data)

    try:
        await export.export_jsonl(call.lib, call.caller.tenant_id, request, sink)
        await call.chunk(b"", more=False)
    except ClientGone:
        call.info.outcome = "client_gone"
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _watch_disconnect(call: Call, gone: asyncio.Event) -> None:
    while (await call.receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def import_endpoint(call: Call) -> None:
    target = call.request.query_params.get("target_agent_id", "")
    dry_run = _flag(call.request.query_params.get("dry_run"))
    problem = _agent_problem(call.lib, "target_agent_id", target)
    if dry_run is None or problem:
        await call.json(400, {"error": problem or "dry_run must be true or false"})
        return
    if await _refused(call, target, "read-write") or await _too_large(call):
        return
    if not dry_run and await _paused(call):
        return
    limit = call.lib.settings.max_import_bytes
    request = import_.ImportRequest(target, dry_run)
    try:
        async with contextlib.aclosing(files.bounded(_body(call), limit)) as chunks:
            result = await import_.import_jsonl(call.lib, call.caller.tenant_id, chunks, request)
    except files.InputTooLarge:
        await call.json(413, {"error": f"request body too large (max {limit} bytes)"})
        return
    except ClientGone:
        call.info.outcome = "client_gone"
        return
    call.info.outcome = "ok" if result["ok"] else "failed"
    await call.json(200 if result["ok"] else 422, result)


async def _paused(call: Call) -> bool:
    """Under a persistence pause a real import answers the tool's skipped body."""
    session = request.session_key_from_headers(call.scope.get("headers", []))
    active = await pauses.active_pause(call.lib, call.caller.tenant_id, session)
    if active is None:
        return False
    default = {
        "ok": True, "dry_run": False, "imported_memories": 0, "skipped_memories": 0,
        "imported_episodes": 0, "skipped_episodes": 0, "profile_updated": False,
    }  # fmt: skip
    await call.json(200, pauses.skipped_body(default, "import_memories", active))
    return True


async def upload_endpoint(call: Call) -> None:
    name = call.scope["path_params"]["name"]
    if not any(level == "read-write" for level in call.caller.grants.values()):
        await call.json(403, {"ok": False, "error": "permission_denied", "required": "read-write"})
        return
    if await _too_large(call):
        return
    limit = call.lib.settings.max_import_bytes
    try:
        async with contextlib.aclosing(_body(call)) as chunks:
            size = await files.save_upload(call.lib.settings, call.caller.tenant_id, name, chunks)
    except files.InputTooLarge:
        await call.json(413, {"error": f"request body too large (max {limit} bytes)"})
    except InvalidInput as exc:
        await call.json(400, {"ok": False, "error": exc.message})
    except ClientGone:
        call.info.outcome = "client_gone"
    else:
        await call.json(201, {"ok": True, "path": name, "bytes": size})


async def download_endpoint(call: Call) -> None:
    settings = call.lib.settings
    grant = signing.verify(signing.signing_key(settings), call.scope["path_params"]["token"])
    if grant is None or grant.tenant_id != call.caller.tenant_id:
        await call.json(404, {"error": "not found"})
        return
    if grant.expired:
        await call.json(410, {"error": "download link expired: export again for a new one"})
        return
    try:
        handle, size = await files.open_download(settings, grant.tenant_id, grant.name)
    except NotFound:
        await call.json(404, {"error": "not found"})
        return
    filename = grant.name.rsplit("/", 1)[-1].replace('"', "")
    disposition = f'attachment; filename="{filename}"'.encode("latin-1", "replace")
    await call.start_stream([(b"content-type", JSONL), (b"content-length", str(size).encode()),
                             (b"content-disposition", disposition)])  # fmt: skip
    async for data in files.read_chunks(handle, None):
        await call.chunk(data)
    await call.chunk(b"", more=False)


def routes(
    lib: Library, anonymous: Caller | None, security: TransportSecuritySettings
) -> list[Route]:
    """The portability routes of ``create_app`` (``security``: the /mcp Host/Origin rules)."""
    config = EdgeConfig(lib, anonymous, TransportSecurityMiddleware(security))

    def edge(handler: Handler, route: str) -> PortabilityEdge:
        return PortabilityEdge(handler, config, route)

    return [
        Route("/v1/export", edge(export_endpoint, "/v1/export"), methods=["GET"]),
        Route("/v1/import", edge(import_endpoint, "/v1/import"), methods=["POST"]),
        Route("/v1/files/{token}", edge(download_endpoint, "/v1/files/{token}"), methods=["GET"]),
        Route("/v1/files/{name:path}", edge(upload_endpoint, "/v1/files/{name}"), methods=["POST"]),
    ]
