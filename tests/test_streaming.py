"""Streamed turns: the event sequence, chaining from them, breaks and disconnects."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import openai
import pytest

from .conftest import Gateway
from .fake_upstream import Reply, sent_messages

pytestmark = [pytest.mark.api]

# How a streamed turn starts, ends and is stored is the gateway's own: alike on either wire.
WIRES = pytest.mark.parametrize("model", ["chat-model", "resp-model"])
TOTAL_TOKENS = {"chat-model": 18, "resp-model": 9}  # what the fake reports on each wire


def raw_events(gateway: Gateway, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The SSE events of one streamed request, checking each ``event:`` line."""
    events = []
    with httpx.stream("POST", f"{gateway.url}/v1/responses", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                event = json.loads(line.removeprefix("data: "))
                assert event["type"] == kind
                events.append(event)
    return events


@WIRES
def test_event_sequence_of_a_streamed_text_reply(gateway: Gateway, model: str) -> None:
    gateway.fake.script(Reply(text="Hello, streaming world!"))
    client = gateway.client()
    events = list(client.responses.create(model=model, input="hi", stream=True))
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert (
        sum(t in ("response.completed", "response.failed", "response.incomplete") for t in types)
        == 1
    )
    assert types[2:5] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert types[-5:-1] == [
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert deltas == final.output_text == "Hello, streaming world!"
    assert gateway.fake.last["stream"] is True
    if model == "chat-model":
        assert gateway.fake.last["stream_options"] == {"include_usage": True}
    assert final.usage is not None and final.usage.total_tokens == TOTAL_TOKENS[model]


@WIRES
def test_chaining_from_a_streamed_response(gateway: Gateway, model: str) -> None:
    client = gateway.client()
    events = list(client.responses.create(model=model, input="first", stream=True))
    first_id = events[0].response.id  # type: ignore[union-attr]
    assert client.responses.retrieve(first_id).status == "completed"
    second = client.responses.create(model=model, input="second", previous_response_id=first_id)
    assert [text for _, text in sent_messages(gateway.fake.last)] == [
        "first",
        "reply to: first",
        "second",
    ]
    assert second.previous_response_id == first_id


@WIRES
def test_a_broken_upstream_stream_ends_failed_and_is_stored_failed(
    gateway: Gateway, model: str
) -> None:
    gateway.fake.script(Reply(text="this will not finish", break_after=3))
    events = raw_events(gateway, {"model": model, "input": "x", "stream": True})
    assert events[-1]["type"] == "response.failed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
    client = gateway.client()
    assert client.responses.retrieve(failed["id"]).status == "failed"
    try:
        client.responses.create(model=model, input="y", previous_response_id=failed["id"])
        raise AssertionError("a failed turn must not be continued")
    except openai.BadRequestError as error:
        assert error.code == "turn_not_continuable"


@WIRES
def test_a_client_that_disconnects_still_gets_its_turn_stored(gateway: Gateway, model: str) -> None:
    gateway.fake.script(Reply(text="slow words arrive one by one", delay=0.05))
    body = {"model": model, "input": "slow", "stream": True}
    with httpx.stream("POST", f"{gateway.url}/v1/responses", json=body, timeout=30) as response:
        lines = response.iter_lines()
        next(line for line in lines if line.startswith("event: response.created"))
        created = json.loads(next(lines).removeprefix("data: "))
    response_id = created["response"]["id"]  # the connection is closed here, mid-stream
    client = gateway.client()
    for _ in range(200):  # bounded wait for the background turn, not a speed assertion
        status = client.responses.retrieve(response_id).status
        if status != "in_progress":
            break
        time.sleep(0.05)
    stored = client.responses.retrieve(response_id)
    assert stored.status == "completed"
    assert stored.output_text == "slow words arrive one by one"


@WIRES
def test_upstream_refusal_before_streaming_is_a_plain_http_error(
    gateway: Gateway, model: str
) -> None:
    gateway.fake.script(Reply(status=429, error_body={"error": {"message": "slow down"}}))
    response = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": model, "input": "x", "stream": True},
    )
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert gateway.stored_rows() == 0


def test_store_false_streams_without_storing(gateway: Gateway) -> None:
    events = raw_events(gateway, {"model": "echo", "input": "x", "stream": True, "store": False})
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["store"] is False
    assert gateway.stored_rows() == 0


def test_a_length_cut_streams_response_incomplete(gateway: Gateway) -> None:
    gateway.fake.script(Reply(text="cut sho", finish_reason="length"))
    events = raw_events(gateway, {"model": "chat-model", "input": "x", "stream": True})
    assert events[-1]["type"] == "response.incomplete"
    final = events[-1]["response"]
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    second = gateway.client().responses.create(
        model="chat-model", input="go on", previous_response_id=final["id"]
    )
    assert second.status == "completed"
