"""MCP tools and ``web_search`` in one turn: one loop runs both kinds, one
``max_tool_calls`` counts every call the gateway runs, streamed or not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Gateway
from .fake_search import FakeSearch
from .fake_upstream import FakeUpstream, Reply
from .mcp_gateway import ROLL, call, dice_tool
from .mcp_server import McpServer
from .web_search_gateway import fake_searches, search, search_gateway, tool_messages

pytestmark = [pytest.mark.api]


@pytest.fixture(scope="module")
def searxng() -> Iterator[tuple[FakeSearch, str]]:
    with fake_searches() as served:
        yield served["searxng"]


@pytest.fixture
def both(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    dice: McpServer,
    searxng: tuple[FakeSearch, str],
) -> Iterator[Gateway]:
    """A gateway that searches through SearXNG and reaches the test MCP server."""
    dice.calls.clear()
    mcp = {"allowed_servers": [dice.url], "call_timeout_seconds": 5, "connect_timeout_seconds": 5}
    with search_gateway(fake_upstream, tmp_path, [searxng], config={"mcp": mcp}) as gateway:
        yield gateway


def test_one_max_tool_calls_counts_mcp_calls_and_searches_alike(
    both: Gateway, dice: McpServer, searxng: tuple[FakeSearch, str]
) -> None:
    """The model rolls, then searches, then rolls again with room for two calls: the
    third call is not run, not shown and not read back; both kinds ran in one loop."""
    client = both.client()
    fields: dict[str, Any] = {
        "model": "chat-model",
        "input": "roll, then look it up",
        "tools": [dice_tool(dice), {"type": "web_search"}],
        "max_tool_calls": 2,
    }
    for stream in (False, True):
        both.fake.reset()
        dice.calls.clear()
        searxng[0].reset()
        both.fake.script(call(call_id="c1"), search("dice odds", call_id="c2"), call(call_id="c3"))
        if stream:
            with client.responses.stream(**fields) as events:
                seen = list(events)
                response = events.get_final_response()
            added = [e.output_index for e in seen if e.type == "response.output_item.added"]
            assert added == [0, 1, 2], stream
        else:
            response = client.responses.create(**fields)
        kinds = [item.type for item in response.output]
        assert kinds == ["mcp_list_tools", "mcp_call", "web_search_call"], stream
        assert [item.status for item in response.output[1:]] == ["completed", "completed"]
        assert response.status == "completed"
        assert dice.calls == [("roll", {"sides": 6})] and len(searxng[0].requests) == 1
        first, second, third = both.fake.requests
        offered = {tool["function"]["name"] for tool in first["tools"]}
        assert {ROLL, "web_search"} <= offered
        assert "web_search" in {tool["function"]["name"] for tool in second["tools"]}
        assert "tools" not in third  # two calls made: the functions are no longer offered
        assert [m["tool_call_id"] for m in tool_messages(third)] == ["c1", "c2"]


def test_a_search_beyond_max_tool_calls_is_ignored_as_an_mcp_call_is(
    both: Gateway, searxng: tuple[FakeSearch, str]
) -> None:
    """Two searches at once with room for one: the second is not run, not shown and not
    read back, as for MCP calls."""
    searxng[0].reset()
    two = Reply(
        tool_calls=[("c1", "web_search", '{"query": "a"}'), ("c2", "web_search", '{"query": "b"}')],
        finish_reason="tool_calls",
    )
    both.fake.script(two, Reply(text="Found it."))
    response = both.client().responses.create(
        model="chat-model",
        input="look twice",
        tools=[{"type": "web_search"}],
        max_tool_calls=1,
    )
    assert [item.type for item in response.output] == ["web_search_call", "message"]
    assert len(searxng[0].requests) == 1
    assert [m["tool_call_id"] for m in tool_messages(both.fake.last)] == ["c1"]
