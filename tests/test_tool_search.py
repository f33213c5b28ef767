"""``tool_search`` run by the client, and functions with ``defer_loading``: a translated model
is not offered deferred tools until a search loads them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from .conftest import Gateway
from .fake_anthropic import AnthropicReply, FakeAnthropic
from .fake_upstream import Reply
from .test_anthropic_wire import claude  # noqa: F401

pytestmark = [pytest.mark.api]

EMPTY = {"type": "object", "properties": {}}
SEARCH = {"type": "tool_search", "execution": "client", "description": "Find more tools."}
DEFERRED = {"type": "function", "name": "refund", "parameters": EMPTY, "defer_loading": True}
TOOLS: Any = [
    SEARCH,
    {"type": "function", "name": "lookup", "parameters": EMPTY},
    DEFERRED,
    {
        "type": "namespace",
        "name": "crm",
        "description": "The CRM.",
        "tools": [
            {"type": "function", "name": "list", "parameters": EMPTY},
            {"type": "function", "name": "find", "parameters": EMPTY, "defer_loading": True},
        ],
    },
]
QUERY = '{"query": "refund an order"}'


def chat_offered(gateway: Gateway) -> list[str]:
    return [tool["function"]["name"] for tool in gateway.fake.last.get("tools", [])]


@pytest.mark.parametrize("store", [True, False])
def test_a_chat_model_searches_and_is_offered_what_the_client_loads(
    gateway: Gateway, store: bool
) -> None:
    client = gateway.client()
    gateway.fake.script(
        Reply(tool_calls=[("call_s", "tool_search", QUERY)], finish_reason="tool_calls"),
        Reply(tool_calls=[("call_r", "refund", "{}")], finish_reason="tool_calls"),
    )
    asked: Any = [{"role": "user", "content": "Refund order 7."}]
    first = client.responses.create(model="chat-model", input=asked, tools=TOOLS, store=store)
    assert chat_offered(gateway) == ["tool_search", "lookup", "crm__list"]
    [search] = first.output
    assert search.type == "tool_search_call"
    assert (search.execution, search.arguments, search.call_id) == (
        "client",
        {"query": "refund an order"},
        "call_s",
    )
    loaded = {
        "type": "tool_search_output",
        "call_id": "call_s",
        "execution": "client",
        "status": "completed",
        "tools": [DEFERRED],
    }
    if store:
        follow: dict[str, Any] = {"input": [loaded], "previous_response_id": first.id}
    else:
        made = [item.model_dump(exclude_none=True) for item in first.output]
        follow = {"input": [*asked, *made, loaded]}
    second = client.responses.create(**follow, model="chat-model", tools=TOOLS, store=store)
    assert chat_offered(gateway) == ["tool_search", "lookup", "crm__list", "refund"]
    call, answer = gateway.fake.last["messages"][-2:]
    assert call["tool_calls"][0]["function"] == {"name": "tool_search", "arguments": QUERY}
    assert answer["role"] == "tool" and json.loads(answer["content"]) == {
        "loaded_tools": ["refund"]
    }
    [refund] = second.output
    assert refund.type == "function_call" and refund.name == "refund"


def test_a_claude_model_searches_the_same_way(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    fake.script(
        AnthropicReply(tool_uses=[("toolu_s", "tool_search", {"query": "refund"})]),
        AnthropicReply(text="Refunded."),
    )
    client = gateway.client()
    first = client.responses.create(model="claude", input="Refund order 7.", tools=TOOLS)
    assert [tool["name"] for tool in fake.last["tools"]] == ["tool_search", "lookup", "crm__list"]
    assert first.output[-1].type == "tool_search_call"
    loaded: Any = {
        "type": "tool_search_output",
        "call_id": "toolu_s",
        "execution": "client",
        "tools": [DEFERRED],
    }
    second = client.responses.create(
        model="claude", input=[loaded], previous_response_id=first.id, tools=TOOLS
    )
    assert second.output_text == "Refunded."
    assert [tool["name"] for tool in fake.last["tools"]][-1] == "refund"
    result = fake.last["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_s"


def test_a_responses_upstream_gets_the_tools_and_items_as_they_are(gateway: Gateway) -> None:
    gateway.client().responses.create(model="resp-model", input="Refund order 7.", tools=TOOLS)
    assert gateway.fake.last["tools"] == TOOLS


def test_a_search_the_provider_would_run_is_refused_on_a_chat_model(gateway: Gateway) -> None:
    answer = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": "chat-model", "input": "x", "tools": [{"type": "tool_search"}]},
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "tools[0].execution"
    assert error["message"] == (
        "Tool 'tool_search' is not supported with chat-model: a search the provider runs "
        "(execution: 'server') is not run for this model."
    )
    assert gateway.fake.requests == []


def test_a_streamed_search_call_is_the_native_item(gateway: Gateway) -> None:
    gateway.fake.script(
        Reply(tool_calls=[("call_s", "tool_search", QUERY)], finish_reason="tool_calls")
    )
    events = list(
        gateway.client().responses.create(
            model="chat-model", input="Refund order 7.", tools=TOOLS, stream=True
        )
    )
    done = [e.item for e in events if e.type == "response.output_item.done"]  # type: ignore[union-attr]
    assert [item.type for item in done] == ["tool_search_call"]
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output[0].arguments == {"query": "refund an order"}


HOSTED: Any = [{"type": "tool_search"}, DEFERRED]
SEARCHED: list[dict[str, Any]] = [
    {
        "id": "tsc_upstream",
        "type": "tool_search_call",
        "execution": "server",
        "call_id": None,
        "arguments": {"query": "refund"},
        "status": "completed",
    },
    {
        "id": "tso_upstream",
        "type": "tool_search_output",
        "execution": "server",
        "call_id": None,
        "status": "completed",
        "tools": [DEFERRED],
    },
]


@pytest.mark.parametrize("stream", [False, True])
def test_a_search_a_responses_upstream_runs_passes_through_and_is_replayed(
    gateway: Gateway, stream: bool
) -> None:
    """The provider searches its own deferred tools: its items come back typed, under the
    gateway's ids, and go back to it on the next turn as it made them."""
    client = gateway.client()
    gateway.fake.script(Reply(text="Refunded.", items=SEARCHED), Reply(text="Done."))
    asked: Any = {"model": "resp-model", "input": "Refund order 7.", "tools": HOSTED}
    if stream:
        with client.responses.stream(**asked) as events:
            kinds = [(e.type, getattr(e, "item", None)) for e in events]
            first = events.get_final_response()
        added = [item.type for kind, item in kinds if kind == "response.output_item.added"]
        assert added == ["tool_search_call", "tool_search_output", "message"]
    else:
        first = client.responses.create(**asked)
    assert gateway.fake.last["tools"] == HOSTED
    call, output, message = first.output
    assert call.type == "tool_search_call" and output.type == "tool_search_output"
    assert (call.execution, call.arguments) == ("server", {"query": "refund"})
    assert output.tools[0].model_dump(exclude_none=True) == DEFERRED
    assert message.type == "message" and first.output_text == "Refunded."
    assert not {call.id, output.id} & {"tsc_upstream", "tso_upstream"}
    second = client.responses.create(
        model="resp-model", input="And order 8?", previous_response_id=first.id, tools=HOSTED
    )
    assert second.output_text == "Done."
    replayed = [item for item in gateway.fake.last["input"] if item["type"].startswith("tool_")]
    assert replayed == [{k: v for k, v in item.items() if k != "id"} for item in SEARCHED]
