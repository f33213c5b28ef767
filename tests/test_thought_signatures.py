"""Gemini's thought signatures through a Chat Completions upstream: the signature a tool
call came with goes back on that call on every later turn, from the store or from a
stateless client's ``encrypted_content``, and to that model only."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Gateway
from .fake_upstream import Reply

pytestmark = [pytest.mark.api]

LOOKUP = {
    "type": "function",
    "name": "lookup",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def signed_call(signature: str = "sig-A") -> Reply:
    return Reply(
        tool_calls=[("call_1", "lookup", '{"city": "Oslo"}'), ("call_2", "lookup", "{}")],
        finish_reason="tool_calls",
        thought_signature=signature,
    )


OUTPUTS: list[Any] = [
    {"type": "function_call_output", "call_id": "call_1", "output": "cold"},
    {"type": "function_call_output", "call_id": "call_2", "output": "?"},
]


def sent_calls(gateway: Gateway) -> list[dict[str, Any]]:
    return [c for m in gateway.fake.last["messages"] for c in m.get("tool_calls") or []]


@pytest.mark.parametrize("stream", [False, True])
def test_a_stored_chain_sends_the_signature_back_on_its_call(
    gateway: Gateway, stream: bool
) -> None:
    client = gateway.client()
    gateway.fake.script(signed_call(), Reply(text="Cold in Oslo."))
    request: dict[str, Any] = {"model": "chat-model", "tools": [LOOKUP]}
    if stream:
        events = list(client.responses.create(input="Oslo?", stream=True, **request))
        first = events[-1].response
    else:
        first = client.responses.create(input="Oslo?", **request)
    kinds = [item.type for item in first.output]
    assert kinds == ["reasoning", "function_call", "function_call"]
    assert first.output[0].encrypted_content is not None
    assert "sig-A" not in first.output[0].encrypted_content  # sealed
    second = client.responses.create(input=OUTPUTS, previous_response_id=first.id, **request)
    assert second.output_text == "Cold in Oslo."
    first_call, second_call = sent_calls(gateway)
    assert first_call["extra_content"] == {"google": {"thought_signature": "sig-A"}}
    assert "extra_content" not in second_call


def test_a_stateless_client_carries_the_signature(gateway: Gateway) -> None:
    client = gateway.client()
    gateway.fake.script(signed_call("sig-B"), Reply(text="Done."))
    request: dict[str, Any] = {
        "model": "chat-model",
        "tools": [LOOKUP],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    first = client.responses.create(input="Oslo?", **request)
    items = [item.model_dump(exclude_none=True) for item in first.output]
    question = {"role": "user", "content": "Oslo?"}
    second = client.responses.create(input=[question, *items, *OUTPUTS], **request)
    assert second.output_text == "Done."
    assert sent_calls(gateway)[0]["extra_content"]["google"]["thought_signature"] == "sig-B"


def test_without_the_signature_the_upstream_refuses_the_turn(gateway: Gateway) -> None:
    """What the gateway prevents: the calls sent back bare (here by a stateless client that
    dropped the reasoning item) are refused by the provider, and its refusal is relayed."""
    client = gateway.client()
    gateway.fake.script(signed_call(), Reply(text="never"))
    first = client.responses.create(model="chat-model", input="Oslo?", tools=[LOOKUP], store=False)  # type: ignore[list-item]
    calls = [item.model_dump(exclude_none=True) for item in first.output[1:]]
    question = {"role": "user", "content": "Oslo?"}
    refused = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": "chat-model", "input": [question, *calls, *OUTPUTS]},
    )
    assert refused.status_code == 400
    assert "thought_signature" in refused.json()["error"]["message"]
