"""``reasoning.context``: which earlier reasoning items a chain replays, on every wire."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Gateway
from .fake_anthropic import AnthropicReply, FakeAnthropic
from .fake_upstream import Reply
from .test_anthropic_wire import WEATHER, claude  # noqa: F401

pytestmark = [pytest.mark.api]

LOOKUP = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}


def reasoning_sent(gateway: Gateway) -> list[str | None]:
    """The ``reasoning_content`` of each assistant message of the last chat request."""
    messages = gateway.fake.last["messages"]
    return [m.get("reasoning_content") for m in messages if m["role"] == "assistant"]


@pytest.mark.parametrize(
    ("context", "replayed"),
    [
        (None, ["Thought one."]),
        ("all_turns", ["Thought one."]),
        ("auto", ["Thought one."]),
        ("current_turn", [None]),
    ],
)
@pytest.mark.parametrize("store", [True, False])
def test_the_chat_wire_replays_earlier_reasoning_as_asked(
    gateway: Gateway, context: str | None, replayed: list[str | None], store: bool
) -> None:
    client = gateway.client()
    gateway.fake.script(Reply(reasoning="Thought one.", text="Answer one."))
    first = client.responses.create(model="chat-model", input="One?", store=store)
    assert [item.type for item in first.output] == ["reasoning", "message"]
    reasoning: dict[str, Any] = {"effort": "low"}
    if context is not None:
        reasoning["context"] = context
    follow: dict[str, Any] = {"model": "chat-model", "reasoning": reasoning, "store": store}
    if store:
        follow |= {"input": "Two?", "previous_response_id": first.id}
    else:  # a stateless client sends the whole context itself
        earlier = [item.model_dump(exclude_none=True) for item in first.output]
        follow["input"] = [{"role": "user", "content": "One?"}, *earlier, "Two?"]
        follow["input"][-1] = {"role": "user", "content": "Two?"}
    second = client.responses.create(**follow)
    assert reasoning_sent(gateway) == replayed
    assert second.reasoning is not None and second.reasoning.context == context


def test_the_current_turns_reasoning_goes_back_with_its_tool_calls(gateway: Gateway) -> None:
    client = gateway.client()
    gateway.fake.script(
        Reply(reasoning="Earlier thought.", text="Earlier answer."),
        Reply(
            reasoning="Call it.",
            tool_calls=[("call_1", "lookup", "{}")],
            finish_reason="tool_calls",
        ),
        Reply(text="Done."),
    )
    current = {"effort": "low", "context": "current_turn"}
    first = client.responses.create(model="chat-model", input="Before.", tools=[LOOKUP])
    asked = client.responses.create(
        model="chat-model",
        input="Look it up.",
        tools=[LOOKUP],
        previous_response_id=first.id,
        reasoning=current,  # type: ignore[typeddict-item]
    )
    assert reasoning_sent(gateway) == [None]
    output = {"type": "function_call_output", "call_id": "call_1", "output": "found"}
    done = client.responses.create(
        model="chat-model",
        input=[output],  # type: ignore[list-item]
        tools=[LOOKUP],
        previous_response_id=asked.id,
        reasoning=current,  # type: ignore[typeddict-item]
    )
    assert done.output_text == "Done."
    assert reasoning_sent(gateway) == [None, "Call it."]  # the turn in progress keeps its own


@pytest.mark.parametrize(("context", "replayed"), [("current_turn", 0), ("all_turns", 2)])
def test_the_anthropic_wire_leaves_earlier_thinking_out_on_current_turn(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
    context: str,
    replayed: int,
) -> None:
    gateway, fake = claude
    client = gateway.client()
    fake.script(
        AnthropicReply(
            thinking="Paris, so weather.", tool_uses=[("toolu_1", "get_weather", {"city": "Paris"})]
        ),
        AnthropicReply(text="Sunny in Paris."),
        AnthropicReply(text="You are welcome."),
    )
    reasoning: Any = {"effort": "low", "context": context}
    request: dict[str, Any] = {"model": "claude", "tools": [WEATHER], "reasoning": reasoning}
    first = client.responses.create(input="Weather in Paris?", **request)
    output = {"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"}
    second = client.responses.create(input=[output], previous_response_id=first.id, **request)
    assert len(fake.replayed_thinking()) == 1  # the turn in progress: always its thinking
    third = client.responses.create(input="Thanks!", previous_response_id=second.id, **request)
    assert third.output_text == "You are welcome."
    assert len(fake.replayed_thinking()) == replayed


def test_the_responses_wire_gets_the_field_and_every_item(gateway: Gateway) -> None:
    client = gateway.client()
    first = client.responses.create(model="resp-model", input="One?")
    reasoning: Any = {"effort": "low", "context": "current_turn"}
    second = client.responses.create(
        model="resp-model", input="Two?", previous_response_id=first.id, reasoning=reasoning
    )
    sent = gateway.fake.last
    assert sent["reasoning"] == {"effort": "low", "context": "current_turn"}
    assert len(sent["input"]) == 1 + len(first.output) + 1  # the upstream applies the field
    assert second.reasoning is not None and second.reasoning.context == "current_turn"
    stored = client.responses.retrieve(second.id)
    assert stored.reasoning is not None and stored.reasoning.context == "current_turn"


def test_an_unknown_context_is_refused(gateway: Gateway) -> None:
    answer = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": "chat-model", "input": "x", "reasoning": {"context": "some_turns"}},
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == ("reasoning.context", "invalid_value")
    assert gateway.fake.requests == []
