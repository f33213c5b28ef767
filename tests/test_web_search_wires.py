"""``web_search`` run by the gateway on the Messages wire, in background and WebSocket
turns, and for the OpenAI Agents SDK's ``WebSearchTool`` on the chat wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIResponsesModel, Runner, WebSearchTool, set_tracing_disabled
from openai import AsyncOpenAI

from .conftest import Gateway
from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_search import FakeSearch
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve
from .test_background import poll
from .test_websocket import turn
from .web_search_gateway import fake_searches, search, search_gateway, tool_messages

pytestmark = [pytest.mark.api]

SOURCES = "web_search_call.action.sources"


@pytest.fixture(scope="module")
def searxng() -> Iterator[tuple[FakeSearch, str]]:
    with fake_searches() as served:
        yield served["searxng"]


@pytest.fixture(scope="module")
def anthropic_upstream() -> Iterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture
def wires(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic_upstream: tuple[FakeAnthropic, str],
    tmp_path: Path,
    searxng: tuple[FakeSearch, str],
) -> Iterator[tuple[Gateway, FakeAnthropic]]:
    claude, claude_url = anthropic_upstream
    claude.reset()
    url = fake_upstream[1]
    config = {
        "providers": {
            "fake-chat": {
                "wire_api": "chat_completions",
                "base_url": f"{url}/v1",
                "api_key": UPSTREAM_KEY,
            },
            "claude": {"wire_api": "anthropic", "base_url": claude_url, "api_key": ANTHROPIC_KEY},
        },
        "models": {
            "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
            "claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"},
        },
        "default_provider": None,
    }
    with search_gateway(fake_upstream, tmp_path, [searxng], config=config) as gateway:
        yield gateway, claude


def claude_search(query: str) -> AnthropicReply:
    return AnthropicReply(tool_uses=[("toolu_1", "web_search", {"query": query})])


@pytest.mark.parametrize("streamed", [False, True])
def test_a_claude_model_searches_and_cites(
    wires: tuple[Gateway, FakeAnthropic], streamed: bool
) -> None:
    gateway, claude = wires
    claude.script(claude_search("paris weather"), AnthropicReply(text="Sunny [1]."))
    client = gateway.client()
    create: dict[str, Any] = {
        "model": "claude",
        "input": "Weather in Paris?",
        "tools": [{"type": "web_search"}],
        "include": [SOURCES],
    }
    if streamed:
        with client.responses.stream(**create) as stream:
            kinds = [event.type for event in stream]
            response = stream.get_final_response()
        assert "response.web_search_call.searching" in kinds
        assert "response.output_text.annotation.added" in kinds
    else:
        response = client.responses.create(**create)
    call, message = response.output
    assert call.type == "web_search_call" and call.status == "completed"
    assert call.action.type == "search" and call.action.query == "paris weather"
    assert message.content[0].type == "output_text"
    (cited,) = message.content[0].annotations
    assert cited.type == "url_citation" and cited.url == "https://example.com/weather/paris"
    assert (cited.start_index, cited.end_index) == (6, 9)
    first, second = claude.requests
    assert [tool["name"] for tool in first["tools"]] == ["web_search"]
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert "Paris weather" in json.dumps(result["content"])
    stored = client.responses.retrieve(response.id)
    assert stored.output[0].model_dump() == call.model_dump()


def test_a_claude_chain_reads_an_earlier_search_back(
    wires: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, claude = wires
    client = gateway.client()
    claude.script(claude_search("paris weather"), AnthropicReply(text="Sunny [1]."))
    first = client.responses.create(
        model="claude", input="Weather?", tools=[{"type": "web_search"}], include=[SOURCES]
    )
    claude.script(AnthropicReply(text="You asked about Paris."))
    again = client.responses.create(
        model="claude", input="What did I ask?", previous_response_id=first.id
    )
    assert again.output_text == "You asked about Paris."
    uses = [
        block
        for message in claude.requests[-1]["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    assert uses and uses[0]["input"] == {"query": "paris weather"}


def test_a_background_turn_searches(wires: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, _ = wires
    gateway.fake.script(search("python"), Reply(text="Out [1]."))
    client = gateway.client()
    queued = client.responses.create(
        model="chat-model", input="q", tools=[{"type": "web_search"}], background=True
    )
    done = poll(client, queued.id, {"completed", "failed"})
    assert done.status == "completed"
    assert [item.type for item in done.output] == ["web_search_call", "message"]
    assert done.output[1].content[0].annotations[0].url == "https://www.python.org/downloads/"


def test_a_websocket_turn_searches(wires: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, _ = wires
    gateway.fake.script(search("python"), Reply(text="Out [1]."))
    with gateway.client().responses.connect() as connection:
        events = turn(connection, model="chat-model", input="q", tools=[{"type": "web_search"}])
    kinds = [event.type for event in events]
    assert "response.web_search_call.completed" in kinds and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output[0].type == "web_search_call"


@pytest.mark.anyio
async def test_the_agents_sdks_web_search_tool_runs_on_a_chat_model(
    wires: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, _ = wires
    set_tracing_disabled(True)
    gateway.fake.script(search("paris weather"), Reply(text="Sunny in Paris [1]."))
    client = AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key="k", max_retries=0)
    tool = WebSearchTool(filters=None, search_context_size="low")
    agent = Agent(
        name="searcher",
        model=OpenAIResponsesModel(model="chat-model", openai_client=client),
        tools=[tool],
    )
    try:
        result = await Runner.run(agent, "Weather in Paris?")
    finally:
        await client.close()
    assert result.final_output == "Sunny in Paris [1]."
    kinds = [item.type for item in result.new_items]
    assert "tool_call_item" in kinds and kinds[-1] == "message_output_item"
    (asked,) = tool_messages(gateway.fake.requests[1])
    assert "Paris weather" in asked["content"]
