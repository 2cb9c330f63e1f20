"""The library's own input bounds for recall (issue 36): it trusts no boundary."""

from __future__ import annotations

import pytest

from service.errors import InvalidInput
from service.memory import bounds
from service.memory.library import Library
from service.memory.recall import pipeline, with_context
from service.memory.tenants import create_tenant
from service.models import TenantId

MAX = bounds.QUERY_CHARS


async def test_recall_refuses_a_query_over_the_cap(lib: Library) -> None:
    tenant = TenantId((await create_tenant(lib.db, "acme")).id)
    request = pipeline.RecallRequest(agent_id="a", query="q" * (MAX + 1))
    with pytest.raises(
        InvalidInput, match=rf"^query is too long \({MAX + 1} characters, max {MAX}\)$"
    ):
        await pipeline.recall(lib, tenant, request)
    at_cap = await pipeline.recall(
        lib, tenant, pipeline.RecallRequest(agent_id="a", query="q" * MAX)
    )
    assert at_cap.rows == ()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"exclude_contents": ["x"] * 101}, "exclude_contents is too long (101 items, max 100)"),
        (
            {"exclude_contents": ["x" * (MAX + 1)]},
            f"exclude_contents/0 is too long ({MAX + 1} characters",
        ),
        ({"source_id": "s" * 257}, "source_id is too long (257 characters, max 256)"),
        ({"agent_id": "a" * 257}, "agent_id is too long (257 characters, max 256)"),
    ],
)
def test_the_request_check_names_the_field_and_its_cap(
    changes: dict[str, object], message: str
) -> None:
    request = pipeline.RecallRequest(**{"agent_id": "a", "query": "q", **changes})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as refused:
        pipeline.check_request(request)
    assert refused.value.message.startswith(message)


def test_turns_are_bounded() -> None:
    with pytest.raises(InvalidInput, match="external_context is too long"):
        with_context.check_turns([{"content": "x"}] * 101)
    with pytest.raises(InvalidInput, match="external_context/1/content is too long"):
        with_context.check_turns(["not a turn", {"content": "x" * (MAX + 1)}])
    with pytest.raises(InvalidInput, match="external_context/0/name is too long"):
        with_context.check_turns([{"content": "x", "name": "n" * 257}])
    with_context.check_turns([7, {"content": 5}, {"content": "x" * MAX}])
