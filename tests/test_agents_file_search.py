"""The OpenAI Agents SDK's ``FileSearchTool`` on models behind the chat and Messages wires:
the gateway searches its own vector stores for the model, and the run's items hold the
``file_search_call`` with its results."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from agents import (
    Agent,
    FileSearchTool,
    ModelSettings,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from .conftest import Gateway
from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_embeddings import FakeEmbeddings
from .fake_upstream import FakeUpstream, Reply
from .file_search_gateway import file_search_gateway, processed
from .servers import serve
from .tool_wires import MODELS

pytestmark = [pytest.mark.anyio, pytest.mark.system]


@pytest.fixture(scope="module")
def embeddings() -> Iterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture
def gateway(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic_upstream: tuple[FakeAnthropic, str],
    embeddings: tuple[FakeEmbeddings, str],
    tmp_path: Path,
) -> Iterator[Gateway]:
    claude, claude_url = anthropic_upstream
    claude.reset()
    providers = {
        "claude": {"wire_api": "anthropic", "base_url": claude_url, "api_key": ANTHROPIC_KEY}
    }
    models = {"claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"}}
    with file_search_gateway(
        fake_upstream, embeddings, tmp_path, providers=providers, models=models
    ) as made:
        made.claude = claude  # type: ignore[attr-defined]
        yield made


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[AsyncOpenAI]:
    set_tracing_disabled(True)
    async with AsyncOpenAI(
        base_url=f"{gateway.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True
    ) as opened:
        yield opened


@pytest.mark.parametrize("wire", ["chat_completions", "anthropic"])
async def test_the_agents_file_search_tool_runs_on_any_wire(
    gateway: Gateway, client: AsyncOpenAI, wire: str
) -> None:
    sync = gateway.client()
    made = sync.files.create(
        file=("tides.md", b"High tide is at 6 pm today."), purpose="assistants"
    )
    store = sync.vector_stores.create(name="t", file_ids=[made.id])
    processed(sync, store.id)
    arguments = {"query": "high tide time"}
    if wire == "anthropic":
        claude: FakeAnthropic = gateway.claude  # type: ignore[attr-defined]
        claude.script(
            AnthropicReply(tool_uses=[("toolu_1", "file_search", arguments)]),
            AnthropicReply(text="At 6 pm [1]."),
        )
    else:
        gateway.fake.script(
            Reply(
                tool_calls=[("c1", "file_search", json.dumps(arguments))],
                finish_reason="tool_calls",
            ),
            Reply(text="At 6 pm [1]."),
        )
    model = OpenAIResponsesModel(model=MODELS[wire], openai_client=client)
    tool = FileSearchTool(
        vector_store_ids=[store.id], max_num_results=3, include_search_results=True
    )
    agent = Agent(name="tides", model=model, tools=[tool], model_settings=ModelSettings())
    result = await Runner.run(agent, "When is high tide?")
    assert result.final_output == "At 6 pm [1]."
    calls = [
        i.raw_item
        for i in result.new_items
        if getattr(i.raw_item, "type", None) == "file_search_call"
    ]
    [call] = calls
    assert call.queries == ["high tide time"]  # type: ignore[union-attr]
    assert call.results[0].filename == "tides.md"  # type: ignore[union-attr]
    if wire == "anthropic":
        told = claude.last["messages"][-1]["content"][0]["content"]
    else:
        told = next(m for m in gateway.fake.last["messages"] if m["role"] == "tool")["content"]
    assert "6 pm" in json.dumps(told)
