"""The size of the tool catalogue a client receives: ``tools/list`` through MCP/HTTP.

Starts the real ``serve`` (fresh embedded Postgres, :mod:`bench.harness.serving`), sends
``initialize`` and ``tools/list`` as plain JSON-RPC over HTTP with a key of the
chosen tool set, and prints the size of the ``tools/list`` result exactly as served
(its JSON text, in characters) in total and per tool, largest first, with the
description and schema shares. Every tool's definition is counted as the compact
JSON the server sent.

    .venv/bin/python -m bench.economy.catalogue                  # a key of tool set "all"
    .venv/bin/python -m bench.economy.catalogue --tools everyday
    .venv/bin/python -m bench.economy.catalogue --json out.json  # also write the numbers
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from bench.harness.serving import ServiceOptions, run_cli, scratch_dir, service_env, serving

PROTOCOL = "2025-11-25"
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": PROTOCOL,
}


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def rpc(http: httpx.Client, url: str, key: str, method: str, params: dict[str, Any]) -> str:
    """One JSON-RPC request; the response body as the server sent it."""
    reply = http.post(
        url,
        headers={**HEADERS, "authorization": f"Bearer {key}"},
        content=compact({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
    )
    reply.raise_for_status()
    return reply.text


def fetch_catalogue(mcp_url: str, key: str) -> str:
    """The raw body of a ``tools/list`` answer (after an ``initialize``)."""
    with httpx.Client(timeout=30) as http:
        hello = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "bench.economy.catalogue", "version": "1"},
        }
        rpc(http, mcp_url, key, "initialize", hello)
        return rpc(http, mcp_url, key, "tools/list", {})


def measure(raw: str) -> dict[str, Any]:
    """Sizes in characters: the body, its ``result``, and each tool (name, description,
    input schema, whole definition)."""
    result = json.loads(raw)["result"]
    tools = [
        {
            "name": tool["name"],
            "chars": len(compact(tool)),
            "description": len(tool.get("description", "")),
            "schema": len(compact(tool.get("inputSchema", {}))),
        }
        for tool in result["tools"]
    ]
    return {
        "body_chars": len(raw),
        "result_chars": len(compact(result)),
        "tools": len(tools),
        "description_chars": sum(t["description"] for t in tools),
        "schema_chars": sum(t["schema"] for t in tools),
        "per_tool": sorted(tools, key=lambda t: -int(t["chars"])),
    }


def report(numbers: dict[str, Any]) -> str:
    lines = [
        f"tools/list: {numbers['tools']} tools, result {numbers['result_chars']:,} chars "
        f"(HTTP body {numbers['body_chars']:,}); descriptions {numbers['description_chars']:,}, "
        f"schemas {numbers['schema_chars']:,}",
        f"{'TOOL':<24} {'CHARS':>6} {'DESC':>6} {'SCHEMA':>6}",
    ]
    for tool in numbers["per_tool"]:
        lines.append(
            f"{tool['name']:<24} {tool['chars']:>6} {tool['description']:>6} {tool['schema']:>6}"
        )
    return "\n".join(lines)


def key_for(env: dict[str, str], tools: str) -> str:
    run_cli(["tenant", "create", "bench", "--name", "Benchmark"], env)
    args = ["key", "create", "--tenant", "bench"]
    if tools != "all":  # "all" is the default; older code has no --tools at all
        args += ["--tools", tools]
    printed = run_cli(args, env)
    return next(word for word in printed.split() if word.startswith("cpk_"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="bench.economy.catalogue", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tools", default="all", help="the key's tool set (all, everyday)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    with scratch_dir() as data_dir:
        env = service_env(data_dir, ServiceOptions(extra_env={"CPERSONA_EMBEDDING_MODE": "none"}))
        key = key_for(env, args.tools)
        with serving(env, data_dir, key) as service:
            numbers = measure(fetch_catalogue(service.mcp_url, key))
    print(report(numbers))
    if args.json is not None:
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
