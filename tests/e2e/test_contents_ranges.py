"""get_contents range objects over MCP (docs/tools.md, "get_contents ranges"), through the
official SDK client against the real app, its worker and a real HTTP embedder (the
passages of a long row are built before a passage range is asked for)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from service.config import Settings
from service.memory.library import Library
from tests.e2e.test_embedder_faults import fault_settings
from tests.e2e.test_passages import stored_and_built
from tests.memory.passages.test_build import expected_pieces, long_text
from tests.servers.embedding import EmbeddingServer, running_server
from tests.support import Agent, new_tenant, serve

WIDTH = 384


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=WIDTH)


@pytest.fixture
def provider(server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    server.reset()
    yield server
    server.reset()


def revision(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def behind(settings: Settings, provider: EmbeddingServer) -> Settings:
    """The HTTP embedder, embedded after the commit so the queue builds the passages."""
    return dataclasses.replace(fault_settings(settings, provider), embedding_inline_timeout_secs=0)


async def contents(client: Agent, *refs: object) -> dict[str, Any]:
    answer: dict[str, Any] = await client.call("get_contents", agent_id="a", refs=list(refs))
    return answer


async def test_span_and_passage_ranges_serve_just_that_part(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    text = long_text(51, 40)
    pieces = expected_pieces(text)
    async with serve(behind(settings, provider), database_url) as served:
        client = await stored_and_built(lib, served, text)
        ref = "mem:1"
        found = await contents(
            client,
            {"ref": ref, "span": [3, 40]},
            {"ref": ref, "span": [100, 10**9]},
            {"ref": ref, "passage": 1},
            {"ref": ref, "passage": [0, 1], "revision": revision(text)},
            ref,
        )
    spans = [item["range"] for item in found["items"][:4]]
    assert [item["content"] for item in found["items"][:2]] == [text[3:40], text[100:]]
    assert spans[0] == {"span": [3, 40], "content_len": len(text)}
    assert spans[1] == {"span": [100, len(text)], "content_len": len(text)}  # clamped
    start = text.index(pieces[1])
    assert found["items"][2]["content"] == pieces[1]
    assert spans[2] == {
        "span": [start, start + len(pieces[1])],
        "content_len": len(text),
        "passage": [1, 1],
        "of": len(pieces),
    }
    assert found["items"][3]["content"] == text[: start + len(pieces[1])]
    assert found["items"][4]["content"] == text
    assert "range" not in found["items"][4]
    assert "unresolved" not in found


async def test_ranges_that_cannot_be_served_exactly_are_unresolved_never_widened(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    text = long_text(52, 30)
    count = len(expected_pieces(text))
    async with serve(behind(settings, provider), database_url) as served:
        client = await stored_and_built(lib, served, text)
        await client.call("store", agent_id="a", message={"content": "a short note"})
        asked: list[object] = [
            {"ref": "mem:1", "span": [len(text), len(text) + 5]},
            {"ref": "mem:1", "span": [9, 4]},
            {"ref": "mem:1", "span": [0, 4], "passage": 0},
            {"ref": "mem:1", "passage": count},
            {"ref": "mem:1", "passage": [2, 1]},
            {"ref": "mem:1", "span": [0, 4], "revision": "0123456789ab"},
            {"ref": "mem:2", "passage": 0},
            {"ref": "mem:999", "span": [0, 4]},
        ]
        found = await contents(client, *asked)
    assert found["items"] == []
    assert found["missing"] == ["mem:999"]  # ownership and existence come first
    assert found["unresolved"] == [
        {"ref": "mem:1", "reason": "span_out_of_range"},
        {"ref": "mem:1", "reason": "invalid_range"},
        {"ref": "mem:1", "reason": "invalid_range"},
        {"ref": "mem:1", "reason": "passage_out_of_range"},
        {"ref": "mem:1", "reason": "invalid_range"},
        {"ref": "mem:1", "reason": "stale_revision"},
        {"ref": "mem:2", "reason": "no_current_passages"},
    ]


async def test_an_edit_makes_a_revision_stale_and_an_episode_counts_without_its_label(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    async with serve(behind(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        await client.call("store", agent_id="a", message={"content": "The spare key is blue."})
        episode = await client.call(
            "archive_episode", agent_id="a", summary="Kite day by the river"
        )
        before = revision("The spare key is blue.")
        fresh = await contents(client, {"ref": "mem:1", "span": [4, 13], "revision": before})
        await client.call("update_memory", memory_id=1, content="The spare key is red.")
        stale = await contents(client, {"ref": "mem:1", "span": [4, 13], "revision": before})
        ep = await contents(client, {"ref": f"ep:{episode['episode_id']}", "span": [0, 4]})
    assert fresh["items"][0]["content"] == "spare key"
    assert stale == {
        "items": [],
        "missing": [],
        "count": 0,
        "unresolved": [{"ref": "mem:1", "reason": "stale_revision"}],
    }
    assert ep["items"][0]["content"] == "Kite"
    assert ep["items"][0]["range"] == {"span": [0, 4], "content_len": 21}


async def test_reconstructs_expand_object_is_accepted_verbatim(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    text = " ".join(long_text(53, 12).split("\n\n")).replace(". ", "; ")
    async with serve(behind(settings, provider), database_url) as served:
        client = await stored_and_built(lib, served, text)
        quoted = await client.call("reconstruct", agent_id="a", query="venue flooded kite")
        expand = next(item["expand"] for item in quoted["items"] if "expand" in item)
        found = await contents(client, expand)
    (item,) = found["items"]
    start, end = expand["span"]
    assert item["content"] == text[start:end]
    assert item["range"]["span"] == [start, end]


async def test_a_budget_defers_range_objects_as_sent(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    async with serve(behind(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        for letter in "xyz":
            await client.call("store", agent_id="a", message={"content": letter * 15_000})
        later = {"ref": "mem:3", "span": [0, 14_000]}
        found = await contents(client, "mem:1", {"ref": "mem:2", "span": [0, 14_000]}, later)
    assert found["deferred"] == [later]
    assert [len(item["content"]) for item in found["items"]] == [15_000, 14_000]
