"""The OpenAI Agents SDK with the gateway as its backend (deterministic fake upstream)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import (
    Agent,
    OpenAIConversationsSession,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from .conftest import Gateway

pytestmark = [pytest.mark.anyio, pytest.mark.system]


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[AsyncOpenAI]:
    set_tracing_disabled(True)
    async with AsyncOpenAI(
        base_url=f"{gateway.url}/v1",
        api_key="k",
        max_retries=0,
        _strict_response_validation=True,
    ) as opened:
        yield opened


def agent(client: AsyncOpenAI) -> Agent[Any]:
    model = OpenAIResponsesModel(model="chat-model", openai_client=client)
    return Agent(name="assistant", instructions="Be brief.", model=model)


def user_messages(gateway: Gateway) -> list[str]:
    return [m["content"] for m in gateway.fake.last["messages"] if m["role"] == "user"]


def message(role: str, text: str) -> Any:
    return {"type": "message", "role": role, "content": text}


async def test_conversations_session_operations(gateway: Gateway, client: AsyncOpenAI) -> None:
    session = OpenAIConversationsSession(openai_client=client)
    await session.add_items([message("user", f"m{n}") for n in range(25)])  # two requests
    items = await session.get_items()
    assert [i["content"][0]["text"] for i in items] == [f"m{n}" for n in range(25)]  # type: ignore[index, typeddict-item]
    latest = await session.get_items(limit=2)
    assert [i["content"][0]["text"] for i in latest] == ["m23", "m24"]  # type: ignore[index, typeddict-item]
    popped = await session.pop_item()
    assert popped is not None and popped["content"][0]["text"] == "m24"  # type: ignore[index, typeddict-item]
    assert len(await session.get_items()) == 24
    conversation_id = session.session_id
    await session.clear_session()
    fresh = OpenAIConversationsSession(conversation_id=conversation_id, openai_client=client)
    with pytest.raises(Exception, match="not found"):
        await fresh.get_items()


async def test_runner_with_a_conversations_session(gateway: Gateway, client: AsyncOpenAI) -> None:
    session = OpenAIConversationsSession(openai_client=client)
    for question in ("one", "two", "three"):
        result = await Runner.run(agent(client), question, session=session)
        assert result.final_output == f"reply to: {question}"
    assert user_messages(gateway) == ["one", "two", "three"]
    assert gateway.fake.last["messages"][0] == {"role": "system", "content": "Be brief."}


async def test_runner_with_conversation_id(gateway: Gateway, client: AsyncOpenAI) -> None:
    conversation = await client.conversations.create()
    for question in ("alpha", "beta", "gamma"):
        await Runner.run(agent(client), question, conversation_id=conversation.id)
    assert user_messages(gateway) == ["alpha", "beta", "gamma"]
    stored = [i async for i in client.conversations.items.list(conversation.id, order="asc")]
    assert len(stored) == 6


async def test_runner_with_previous_response_id(gateway: Gateway, client: AsyncOpenAI) -> None:
    previous = None
    for question in ("first", "second", "third"):
        result = await Runner.run(agent(client), question, previous_response_id=previous)
        previous = result.last_response_id
    assert user_messages(gateway) == ["first", "second", "third"]
    assert [m["content"] for m in gateway.fake.last["messages"]][1:] == [
        "first",
        "reply to: first",
        "second",
        "reply to: second",
        "third",
    ]


async def test_runner_with_auto_previous_response_id_and_a_tool(
    gateway: Gateway, client: AsyncOpenAI
) -> None:
    from agents import function_tool

    from .fake_upstream import Reply

    @function_tool
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    gateway.fake.script(
        Reply(tool_calls=[("call_1", "lookup", '{"city": "Oslo"}')], finish_reason="tool_calls"),
        Reply(text="It is sunny."),
    )
    tooled = agent(client)
    tooled.tools = [lookup]
    result = await Runner.run(tooled, "weather?", auto_previous_response_id=True)
    assert result.final_output == "It is sunny."
    last = gateway.fake.last["messages"]
    assert last[-2]["tool_calls"][0]["id"] == "call_1"
    assert last[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}
    assert [m["content"] for m in last if m["role"] == "user"] == ["weather?"]
