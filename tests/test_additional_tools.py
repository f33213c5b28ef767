"""``additional_tools`` items add tools mid-conversation, and ``function_call_output`` may
name its tool (``name``, ``namespace``): on every wire, stored and stateless."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Gateway
from .fake_anthropic import AnthropicReply, FakeAnthropic
from .fake_upstream import Reply
from .test_anthropic_wire import claude  # noqa: F401

pytestmark = [pytest.mark.api]


def function(name: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}}


ADDED = {"type": "additional_tools", "role": "developer", "tools": [function("search_docs")]}


def chat_tool_names(gateway: Gateway) -> list[str]:
    return [tool["function"]["name"] for tool in gateway.fake.last.get("tools", [])]


@pytest.mark.parametrize("store", [True, False])
def test_the_chat_wire_offers_added_tools_from_their_item_on(gateway: Gateway, store: bool) -> None:
    client = gateway.client()
    first = client.responses.create(
        model="chat-model", input="Hello.", tools=[function("lookup")], store=store
    )
    assert chat_tool_names(gateway) == ["lookup"]
    gateway.fake.script(
        Reply(tool_calls=[("call_docs", "search_docs", "{}")], finish_reason="tool_calls"),
        Reply(text="Found in the docs."),
    )
    added: Any = [ADDED, {"role": "user", "content": "Search the docs."}]
    earlier: list[Any] = [{"role": "user", "content": "Hello."}]
    earlier += [item.model_dump(exclude_none=True) for item in first.output]
    chained: dict[str, Any] = (
        {"previous_response_id": first.id} if store else {"input": [*earlier, *added]}
    )
    asked = client.responses.create(
        **{"input": added, **chained},
        model="chat-model",
        tools=[function("lookup")],
        store=store,
    )
    assert chat_tool_names(gateway) == ["lookup", "search_docs"]
    roles = [m["role"] for m in gateway.fake.last["messages"]]
    assert roles == ["user", "assistant", "user"]  # the item itself is no message
    [call] = [item for item in asked.output if item.type == "function_call"]
    assert call.name == "search_docs"
    output: Any = {"type": "function_call_output", "call_id": "call_docs", "output": "p. 4"}
    if store:
        follow: dict[str, Any] = {"input": [output], "previous_response_id": asked.id}
    else:
        made = [item.model_dump(exclude_none=True) for item in asked.output]
        follow = {"input": [*earlier, *added, *made, output]}
    done = client.responses.create(
        **follow, model="chat-model", tools=[function("lookup")], store=store
    )
    assert done.output_text == "Found in the docs."
    assert chat_tool_names(gateway) == ["lookup", "search_docs"]  # still offered later on


def test_the_anthropic_wire_offers_added_tools(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    fake.script(AnthropicReply(tool_uses=[("toolu_d", "search_docs", {})]))
    answer = gateway.client().responses.create(
        model="claude",
        input=[ADDED, {"role": "user", "content": "Search."}],  # type: ignore[list-item]
        tools=[function("lookup"), function("search_docs")],  # type: ignore[list-item]
    )
    assert [tool["name"] for tool in fake.last["tools"]] == ["lookup", "search_docs"]  # once
    assert [item.type for item in answer.output][-1] == "function_call"
    assert [m["role"] for m in fake.last["messages"]] == ["user"]


def test_a_responses_upstream_gets_the_item_as_it_is(gateway: Gateway) -> None:
    gateway.client().responses.create(
        model="resp-model",
        input=[ADDED, {"role": "user", "content": "Search."}],  # type: ignore[list-item]
        tools=[function("lookup")],  # type: ignore[list-item]
    )
    sent = gateway.fake.last
    assert sent["input"][0] == ADDED
    assert [tool["name"] for tool in sent["tools"]] == ["lookup"]


@pytest.mark.parametrize(
    ("tools", "param"),
    [
        ([{"type": "web_search"}], "input[0].tools[0].type"),
        ([{"type": "function", "name": "no spaces please"}], "input[0].tools[0].name"),
        ("all of them", "input[0].tools"),
    ],
)
def test_what_an_item_cannot_add_is_refused(gateway: Gateway, tools: Any, param: str) -> None:
    item = {"type": "additional_tools", "role": "developer", "tools": tools}
    answer = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": "chat-model", "input": [item, {"role": "user", "content": "x"}]},
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param
    assert gateway.fake.requests == []


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
def test_a_function_call_output_may_name_its_tool(gateway: Gateway, model: str) -> None:
    call = {
        "type": "function_call",
        "call_id": "call_n",
        "name": "read",
        "namespace": "files",
        "arguments": "{}",
    }
    output = {
        "type": "function_call_output",
        "call_id": "call_n",
        "output": "contents",
        "name": "read",
        "namespace": "files",
    }
    namespace = {
        "type": "namespace",
        "name": "files",
        "description": "Files.",
        "tools": [function("read")],
    }
    answer = gateway.client().responses.create(
        model=model,
        input=[{"role": "user", "content": "Read it."}, call, output],  # type: ignore[list-item]
        tools=[namespace],  # type: ignore[list-item]
    )
    assert answer.status == "completed"
    listed = gateway.client().responses.input_items.list(answer.id, order="asc").data
    assert (listed[-1].name, listed[-1].namespace) == ("read", "files")  # type: ignore[union-attr]
    if model == "resp-model":
        assert gateway.fake.last["input"][-1].items() >= output.items()
    else:
        assert gateway.fake.last["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_n",
            "content": "contents",
        }
    bad = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": model, "input": [call, {**output, "namespace": 7}]},
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "input[1].namespace"
