"""The Open Responses acceptance cases, as raw HTTP, on the Chat Completions and Responses
wires: each answer is a complete ``ResponseResource`` (every field the spec requires, the SDK's
strict types) with the status and items the case expects; streamed cases have every event
typed. The fake upstream makes the tool call a case asks for."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from .conftest import Gateway
from .console_data import PIXEL
from .fake_upstream import Reply
from .test_response_object import assert_complete

pytestmark = [pytest.mark.api]

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city and state"}},
        "required": ["location"],
    },
}
ASK_WEATHER = {"type": "message", "role": "user", "content": "What's the weather like in SF?"}
CALL = Reply(
    tool_calls=[("call_sf", "get_weather", '{"location": "San Francisco, CA"}')],
    finish_reason="tool_calls",
)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


# id -> (request, whether streamed, the scripted answer, the output item type expected)
CASES: dict[str, tuple[dict[str, Any], bool, Reply | None, str]] = {
    "basic-response": ({"input": [user("Say hello in exactly 3 words.")]}, False, None, "message"),
    "streaming-response": ({"input": [user("Count from 1 to 5.")]}, True, None, "message"),
    "system-prompt": (
        {"input": [{"type": "message", "role": "system", "content": "Be a pirate."}, user("Hi.")]},
        False,
        None,
        "message",
    ),
    "tool-calling": ({"input": [ASK_WEATHER], "tools": [WEATHER]}, False, CALL, "function_call"),
    "tool-calling-streaming": (
        {"input": [ASK_WEATHER], "tools": [WEATHER]},
        True,
        CALL,
        "function_call",
    ),
    "image-input": (
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "What do you see?"},
                        {"type": "input_image", "image_url": PIXEL},
                    ],
                }
            ]
        },
        False,
        None,
        "message",
    ),
    "multi-turn": (
        {
            "input": [
                user("My name is Alice."),
                {"type": "message", "role": "assistant", "content": "Hello Alice!"},
                user("What is my name?"),
            ]
        },
        False,
        None,
        "message",
    ),
}
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def streamed(url: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with httpx.stream("POST", url, json={**body, "stream": True}, timeout=30) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]
    for event in events:
        EVENTS.validate_python(event, strict=False)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"
    return events, events[-1]["response"]


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
@pytest.mark.parametrize("case", CASES)
def test_the_case_passes(gateway: Gateway, model: str, case: str) -> None:
    request, stream, reply, expected = CASES[case]
    if reply is not None:
        gateway.fake.script(reply)
    url = f"{gateway.url}/v1/responses"
    body = {"model": model, **request}
    if stream:
        events, response = streamed(url, body)
    else:
        answer = httpx.post(url, json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        response, events = answer.json(), []
    assert_complete(response)
    assert response["status"] == "completed"
    assert expected in [item["type"] for item in response["output"]]
    if case == "tool-calling-streaming":
        kinds = [e["type"] for e in events]
        for kind in (
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
        ):
            assert kind in kinds
        for kind in ("response.output_item.added", "response.output_item.done"):
            assert any(e["type"] == kind and e["item"]["type"] == "function_call" for e in events)
    if case.startswith("tool-calling"):
        [call] = [item for item in response["output"] if item["type"] == "function_call"]
        assert (call["name"], json.loads(call["arguments"])) == (
            "get_weather",
            {"location": "San Francisco, CA"},
        )


def test_previous_response_id_recalls_the_first_turn(gateway: Gateway) -> None:
    url = f"{gateway.url}/v1/responses"
    first = httpx.post(url, json={"model": "chat-model", "input": [user("I am Alice.")]}).json()
    second = httpx.post(
        url,
        json={
            "model": "chat-model",
            "input": [user("Who am I?")],
            "previous_response_id": first["id"],
        },
    ).json()
    assert_complete(second)
    sent = [m["content"] for m in gateway.fake.last["messages"]]
    assert sent[0] == "I am Alice." and sent[-1] == "Who am I?"
