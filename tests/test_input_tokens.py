"""``POST /v1/responses/input_tokens``: the whole resolved context, counted."""

from __future__ import annotations

import httpx
import pytest
import quicktok  # type: ignore[import-untyped]
from openai import omit

from gateway.context.tokens import PER_ITEM, PER_REQUEST

from .conftest import Gateway

pytestmark = [pytest.mark.api]


def o200k(text: str) -> int:
    return len(quicktok.get_encoding("o200k_base").encode_ordinary(text))


def test_a_responses_upstream_counts_the_whole_chain(gateway: Gateway) -> None:
    client = gateway.client()
    first = client.responses.create(model="resp-model", input="first question")
    gateway.fake.requests.clear()
    counted = client.responses.input_tokens.count(
        model="resp-model", input="second question", previous_response_id=first.id
    )
    assert counted.object == "response.input_tokens"
    assert counted.input_tokens == 10 * 3  # question, answer, new question
    sent = gateway.fake.last
    assert sent["model"] == "upstream-resp" and "previous_response_id" not in sent
    assert [item["role"] for item in sent["input"]] == ["user", "assistant", "user"]
    assert "store" not in sent and "stream" not in sent


@pytest.mark.parametrize("model", ["chat-model", "echo", None])
def test_other_upstreams_are_counted_with_o200k(gateway: Gateway, model: str | None) -> None:
    client = gateway.client()
    chosen = omit if model is None else model
    alone = client.responses.input_tokens.count(input="How many tokens is this?", model=chosen)
    assert alone.input_tokens == o200k("How many tokens is this?") + PER_ITEM + PER_REQUEST
    assert gateway.fake.requests == []
    first = client.responses.create(model="echo", input="My name is Ada.")
    chained = client.responses.input_tokens.count(
        input="How many tokens is this?",
        previous_response_id=first.id,
        instructions="Be brief.",
        model=chosen,
    )
    history = o200k("My name is Ada.") + o200k(first.output_text) + 2 * PER_ITEM
    assert chained.input_tokens == alone.input_tokens + history + o200k("Be brief.")


def test_a_conversation_is_counted_too(gateway: Gateway) -> None:
    client = gateway.client()
    conversation = client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "earlier words"}]
    )
    counted = client.responses.input_tokens.count(
        model="echo", input="now", conversation=conversation.id
    )
    expected = o200k("earlier words") + o200k("now") + 2 * PER_ITEM + PER_REQUEST
    assert counted.input_tokens == expected


def test_counting_errors(gateway: Gateway) -> None:
    url = f"{gateway.url}/v1/responses/input_tokens"
    missing = httpx.post(url, json={"input": "x", "previous_response_id": "resp_missing"})
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "previous_response_not_found"
    bad = httpx.post(url, json={"input": "x", "temperature": 9})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "temperature"
