"""A ``compaction_trigger`` as the last input item compacts there and then, on every wire,
stored and stateless."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Gateway
from .fake_anthropic import AnthropicReply, FakeAnthropic
from .fake_upstream import Reply
from .test_anthropic_wire import claude  # noqa: F401

pytestmark = [pytest.mark.api]

TRIGGER = {"type": "compaction_trigger"}


def test_a_stateless_chat_client_gets_a_compaction_it_can_send_back(gateway: Gateway) -> None:
    client = gateway.client()
    earlier: Any = [
        {"role": "user", "content": "We are writing a parser."},
        {"role": "assistant", "content": "Start with the tokens."},
    ]
    gateway.fake.script(Reply(text="Goal: a parser. Next: tokens."))
    compacted = client.responses.create(model="chat-model", input=[*earlier, TRIGGER], store=False)
    [item] = compacted.output
    assert item.type == "compaction"
    asked = gateway.fake.last["messages"]
    assert "We are writing a parser." in str(asked)  # the summary is of the context
    follow: Any = [item.model_dump(exclude_none=True), {"role": "user", "content": "Go on."}]
    client.responses.create(model="chat-model", input=follow, store=False)
    sent = gateway.fake.last["messages"]
    assert sent[0]["content"].endswith("Goal: a parser. Next: tokens.")
    assert sent[-1] == {"role": "user", "content": "Go on."}


def test_a_responses_upstream_gets_the_trigger_and_compacts_itself(gateway: Gateway) -> None:
    client = gateway.client()
    first = client.responses.create(model="resp-model", input="Remember the parser.")
    client.responses.create(
        model="resp-model",
        input=[TRIGGER],  # type: ignore[list-item]
        previous_response_id=first.id,
    )
    sent = gateway.fake.last["input"]
    assert sent[-1] == TRIGGER and len(sent) == 3


def test_a_claude_model_summarises_for_the_trigger(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    client = gateway.client()
    fake.script(AnthropicReply(text="Sure."), AnthropicReply(text="Goal: a parser."))
    first = client.responses.create(model="claude", input="We are writing a parser.")
    compacted = client.responses.create(
        model="claude",
        input=[TRIGGER],  # type: ignore[list-item]
        previous_response_id=first.id,
    )
    assert [item.type for item in compacted.output] == ["compaction"]
    assert "compaction_trigger" not in str(fake.last)
