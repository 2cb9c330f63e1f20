"""Confidence scoring (docs/tools.md, "Confidence scoring"; docs/tools.md, "Recall statistics") and
its interplay with pauses (acceptance 74)."""

from __future__ import annotations

from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, new_tenant, serve


async def _count(lib: Library) -> int:
    async with lib.db.admin_tx() as conn:
        return int(await conn.fetchval("SELECT coalesce(sum(recall_count), 0) FROM memories"))


async def test_confidence_scores_rows_and_bumps_stats_except_under_pause(
    lib: Library, database_url: str
) -> None:
    async with serve(Settings(confidence_enabled=True), database_url) as served:
        client = Agent(served, await new_tenant(lib, "conf"))
        for i in range(3):
            await client.call("store", agent_id="a", message={"content": f"hazel nut fact {i}"})
        body = await client.call("recall", agent_id="a", query="hazel", limit=5)
        rows = [row for row in body["messages"] if "ref" in row]
        assert rows
        assert all({"age_hours", "score"} <= set(row["confidence"]) for row in rows)
        assert all(row["match_reason"]["signal"] == "confidence" for row in rows)
        bumped = await _count(lib)
        assert bumped == len(rows)
        await client.call("recall", agent_id="a", query="hazel", deep=True)
        assert await _count(lib) == bumped
        await client.call("pause_persistence", ttl_seconds=60)
        paused = await client.call("recall", agent_id="a", query="hazel", limit=5)
        assert paused["messages"]
        assert await _count(lib) == bumped


async def test_without_confidence_no_confidence_or_rescue_keys(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "acorn"})
    body = await client.call("recall", agent_id="a", query="acorn", deep=True)
    assert "gate_fallback" not in body
    assert all("confidence" not in row for row in body["messages"])
