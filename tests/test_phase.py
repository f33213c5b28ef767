"""``phase`` on assistant messages (``commentary``, ``final_answer``): kept through storage,
replay, conversations and every wire that carries it."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Gateway
from .fake_anthropic import FakeAnthropic
from .fake_upstream import Reply
from .test_anthropic_wire import claude  # noqa: F401

pytestmark = [pytest.mark.api]


def assistant(text: str, phase: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "phase": phase,
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


@pytest.mark.parametrize("stream", [False, True])
def test_a_responses_upstreams_phase_is_kept_and_sent_back(gateway: Gateway, stream: bool) -> None:
    client = gateway.client()
    gateway.fake.script(Reply(text="Working on it.", phase="commentary"))
    if stream:
        events = list(client.responses.create(model="resp-model", input="Go.", stream=True))
        done = [e for e in events if e.type == "response.output_item.done"]
        assert done[0].item.phase == "commentary"  # type: ignore[union-attr]
        first = events[-1].response  # type: ignore[union-attr]
    else:
        first = client.responses.create(model="resp-model", input="Go.")
    assert first.output[0].phase == "commentary"  # type: ignore[union-attr]
    stored = client.responses.retrieve(first.id)
    assert stored.output[0].phase == "commentary"  # type: ignore[union-attr]
    client.responses.create(model="resp-model", input="Go on.", previous_response_id=first.id)
    replayed = [i for i in gateway.fake.last["input"] if i.get("role") == "assistant"]
    assert [i["phase"] for i in replayed] == ["commentary"]


@pytest.mark.parametrize("store", [True, False])
def test_a_clients_phase_goes_to_a_responses_upstream_and_is_stored(
    gateway: Gateway, store: bool
) -> None:
    client = gateway.client()
    items: Any = [
        {"role": "user", "content": "Plan."},
        assistant("Thinking aloud.", "commentary"),
        assistant("The plan.", "final_answer"),
        {"role": "user", "content": "Again."},
    ]
    answer = client.responses.create(model="resp-model", input=items, store=store)
    sent = [i.get("phase") for i in gateway.fake.last["input"] if i.get("role") == "assistant"]
    assert sent == ["commentary", "final_answer"]
    if store:
        listed = client.responses.input_items.list(answer.id, order="asc")
        phases = [getattr(item, "phase", None) for item in listed.data]
        assert phases == [None, "commentary", "final_answer", None]
        client.responses.create(model="resp-model", input="More.", previous_response_id=answer.id)
        again = [i.get("phase") for i in gateway.fake.last["input"] if i.get("role") == "assistant"]
        assert again == ["commentary", "final_answer", None]


def test_the_chat_wire_takes_phased_messages_without_the_field(gateway: Gateway) -> None:
    client = gateway.client()
    items: Any = [
        {"role": "user", "content": "Plan."},
        assistant("The plan.", "final_answer"),
        {"role": "user", "content": "Again."},
    ]
    answer = client.responses.create(model="chat-model", input=items)
    assert answer.status == "completed"
    messages = gateway.fake.last["messages"]
    assert messages[1] == {"role": "assistant", "content": "The plan."}


def test_a_conversation_keeps_the_phase_of_its_items(gateway: Gateway) -> None:
    client = gateway.client()
    conversation = client.conversations.create(items=[assistant("Noted.", "commentary")])
    gateway.fake.script(Reply(text="Done.", phase="final_answer"))
    client.responses.create(model="resp-model", input="Finish.", conversation=conversation.id)
    sent = [i.get("phase") for i in gateway.fake.last["input"] if i.get("role") == "assistant"]
    assert sent == ["commentary"]
    items = client.conversations.items.list(conversation.id, order="asc").data
    phases = [getattr(item, "phase", None) for item in items]
    assert phases == ["commentary", None, "final_answer"]


def test_the_anthropic_wire_takes_phased_messages_without_the_field(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    items: Any = [
        {"role": "user", "content": "Plan."},
        assistant("The plan.", "final_answer"),
        {"role": "user", "content": "Again."},
    ]
    answer = gateway.client().responses.create(model="claude", input=items)
    assert answer.status == "completed"
    assert fake.last["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The plan."}],
    }
