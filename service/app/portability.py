"""HTTP endpoints for moving memory in bulk, authenticated like ``/mcp``.

- ``GET /v1/export[?agent_id=…&include_embeddings=…]``: the JSONL export, streamed as
  it is read (flat memory, backpressure from the socket; a client that goes away
  stops the export).
- ``POST /v1/import[?target_agent_id=…&dry_run=…]``: a JSONL body, parsed while it
  arrives and imported in one transaction; answers the import's JSON result
  (200, or 422 when the file was inconsistent and everything was rolled back).
- ``POST /v1/files/<name>``: upload a file into the caller's export area (for
  ``import_memories``). ``GET /v1/files/<token>``: download a file through the
  signed URL an export returned.

Bodies above ``CPERSONA_MAX_IMPORT_BYTES`` get 413: at once from Content-Length,
or as soon as the streamed count passes the limit (nothing is kept). A body that
stalls or trickles gets 408 (the edge's read timeout and minimum rate) and rolls
the import back; a streamed answer whose client stops reading is abandoned after
``CPERSONA_STREAM_STALL_TIMEOUT``. These routes run in the ``bulk`` lane, with their
transactions on the bulk pool, so slow clients never hold the tools' connections.
Grants are
the tools' (docs/tools.md, "Grants"): export and import need read-write on the agent (``*``
when none is named; a body's records go to the target, or with none to their own
agents, which the ``*`` grant covers); an upload needs read-write on some agent.
The export area's rule holds on top (``memory.portability.export_area``): a
download needs read on every agent the file holds, checked against the
downloader's own key when it asks (the signed URL alone is not enough); an upload
to a name in use needs read-write on every agent the old file holds, and is
recorded with the agents its records name. A refusal is 403 with the tools'
``permission_denied`` body; a full area quota is 413 with the quota in the body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from starlette.routing import Route

from service.app.bodies import ClientGone
from service.app.edge import Edge, EdgeDeps, Exchange, Handler, too_large_body
from service.errors import InvalidInput, NotFound, Refused
from service.logs import get_logger
from service.mcp import acl, pausing
from service.mcp.registry import ToolEnv
from service.mcp.render import portability as render_portability
from service.mcp.tools import portability as portability_tools
from service.memory import text
from service.memory.library import Library
from service.memory.portability import export, export_area, files, hosted, import_, signing
from service.memory.portability.access import AgentDenied
from service.models import Permission

log = get_logger("service.request")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")
JSONL = b"application/x-ndjson"


def _flag(value: str | None) -> bool | None:
    lowered = (value or "").strip().lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _agent_problem(lib: Library, name: str, agent: str) -> str | None:
    if len(agent) > lib.settings.max_axis_length:
        return f"{name} too long ({len(agent)} chars, max {lib.settings.max_axis_length})"
    return text.text_problem(agent)


async def _refused(call: Exchange, agent: str, required: Permission) -> bool:
    """Answer 403 (the tools' permission_denied body) unless the caller's grants allow."""
    target = agent or acl.SWEEP
    if acl.allows(call.caller.grants, target, required):
        return False
    where = {"endpoint": call.scope.get("path")}
    await call.json(403, acl.denial(call.caller, target, required, where))
    return True


async def _body(call: Exchange) -> AsyncGenerator[bytes, None]:
    """The request body as it arrives; ClientGone if the client disconnects first."""
    while True:
        message = await call.receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        if body := message.get("body", b""):
            yield body
        if not message.get("more_body", False):
            return


async def export_endpoint(call: Exchange) -> None:
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
    call: Exchange, request: export.ExportRequest, headers: list[tuple[bytes, bytes]]
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
    except ClientGone as gone:  # went away, or stopped reading (ClientStalled)
        call.info.outcome = gone.outcome
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _watch_disconnect(call: Exchange, gone: asyncio.Event) -> None:
    while (await call.receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def import_endpoint(call: Exchange) -> None:
    target = call.request.query_params.get("target_agent_id", "")
    dry_run = _flag(call.request.query_params.get("dry_run"))
    problem = _agent_problem(call.lib, "target_agent_id", target)
    if dry_run is None or problem:
        await call.json(400, {"error": problem or "dry_run must be true or false"})
        return
    if await _refused(call, target, "read-write"):
        return
    if not dry_run and await _paused(call, target):
        return
    limit = call.lib.settings.max_import_bytes
    request = import_.ImportRequest(target, dry_run)
    try:
        async with contextlib.aclosing(files.bounded(_body(call), limit)) as chunks:
            result = await import_.import_jsonl(call.lib, call.caller.tenant_id, chunks, request)
    except files.InputTooLarge:
        await call.json(413, too_large_body(limit))
        return
    except ClientGone as gone:
        call.info.outcome = gone.outcome
        return
    except Refused as exc:  # inconsistent file: everything was rolled back
        call.info.outcome = "failed"
        await call.json(422, {"ok": False, "error": exc.message, **exc.details})
        return
    call.info.outcome = "ok"
    await call.json(200, render_portability.imported(result))


async def _paused(call: Exchange, target: str) -> bool:
    """Under a persistence pause a real import answers the import tool's skipped body."""
    env = ToolEnv(call.lib, call.caller, call.info.session_key)
    spec = portability_tools.IMPORT_MEMORIES
    params = portability_tools.ImportParams(input_path="", target_agent_id=target, dry_run=False)
    _, skipped = await pausing.apply(spec, env, params)
    if skipped is None:
        return False
    await call.json(200, skipped)
    return True


async def _denied(call: Exchange, denied: AgentDenied) -> None:
    where = {"endpoint": call.scope.get("path")}
    await call.json(403, acl.file_denial(call.caller, denied.required, where))


async def upload_endpoint(call: Exchange) -> None:
    name = call.scope["path_params"]["name"]
    if not any(level == "read-write" for level in call.caller.grants.values()):
        await call.json(403, acl.denial(call.caller, None, "read-write", {}))
        return
    limit = call.lib.settings.max_import_bytes
    access = portability_tools.area_access(ToolEnv(call.lib, call.caller))
    try:
        async with contextlib.aclosing(_body(call)) as chunks:
            size = await hosted.upload_to_area(
                call.lib, call.caller.tenant_id, access, name, chunks
            )
    except files.InputTooLarge:
        await call.json(413, too_large_body(limit))
    except export_area.QuotaExceeded as exc:
        await call.json(413, {"ok": False, "error": exc.message, **exc.details})
    except AgentDenied as denied:
        await _denied(call, denied)
    except InvalidInput as exc:
        await call.json(400, {"ok": False, "error": exc.message})
    except ClientGone as gone:
        call.info.outcome = gone.outcome
    else:
        await call.json(201, {"ok": True, "path": name, "bytes": size})


_UNSAFE_IN_HEADER: dict[int, str | None] = {
    **dict.fromkeys([*range(0x20), 0x7F, ord("\\")], "_"),
    ord('"'): None,
}


def attachment(name: str) -> bytes:
    """The ``Content-Disposition`` of a download of file ``name``: its last segment,
    quotes dropped, control characters and backslashes as ``_`` (a name may hold CR/LF,
    which no header may: the answer would fail after its status, a 500 with a traceback),
    characters outside Latin-1 as ``?``."""
    filename = name.rsplit("/", 1)[-1].translate(_UNSAFE_IN_HEADER)
    return f'attachment; filename="{filename}"'.encode("latin-1", "replace")


async def download_endpoint(call: Exchange) -> None:
    settings = call.lib.settings
    grant = signing.verify(signing.signing_key(settings), call.scope["path_params"]["token"])
    if grant is None or grant.tenant_id != call.caller.tenant_id:
        await call.json(404, {"error": "not found"})
        return
    if grant.expired:
        await call.json(410, {"error": "download link expired: export again for a new one"})
        return
    access = portability_tools.area_access(ToolEnv(call.lib, call.caller))
    try:
        handle, size = await export_area.open_file(
            call.lib, grant.tenant_id, access, grant.name, limit=None, version=grant.storage
        )
    except NotFound:
        await call.json(404, {"error": "not found"})
        return
    except AgentDenied as denied:
        await _denied(call, denied)
        return
    await call.start_stream(
        [
            (b"content-type", JSONL),
            (b"content-length", str(size).encode()),
            (b"content-disposition", attachment(grant.name)),
        ]
    )
    async with contextlib.aclosing(files.read_chunks(handle, None)) as chunks:
        async for data in chunks:
            await call.chunk(data)  # ClientStalled: the edge logs it, the file is closed
    await call.chunk(b"", more=False)


def routes(deps: EdgeDeps) -> list[Route]:
    """The portability routes of ``create_app``, each behind the one edge."""
    settings = deps.lib.settings

    def edge(handler: Handler, route: str, max_body: int) -> Edge:
        return Edge(deps, handler, route=route, max_body=max_body, ceiling=False, lane="bulk")

    upload = settings.max_import_bytes
    small = settings.max_request_bytes
    return [
        Route("/v1/export", edge(export_endpoint, "/v1/export", small), methods=["GET"]),
        Route("/v1/import", edge(import_endpoint, "/v1/import", upload), methods=["POST"]),
        Route(
            "/v1/files/{token}",
            edge(download_endpoint, "/v1/files/{token}", small),
            methods=["GET"],
        ),
        Route(
            "/v1/files/{name:path}",
            edge(upload_endpoint, "/v1/files/{name}", upload),
            methods=["POST"],
        ),
    ]
