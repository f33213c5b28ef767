"""The response object is complete, echoes every request value, and validation is OpenAI's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openai.types.responses import Response

from .conftest import Gateway
from .fake_upstream import Reply, words

pytestmark = [pytest.mark.api]

# Required by the Open Responses schema (ResponseResource), beyond the SDK's own fields.
OPEN_RESPONSES_REQUIRED = {
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "service_tier",
    "max_tool_calls",
    "safety_identifier",
    "prompt_cache_key",
    "store",
    "background",
}

SETTINGS: dict[str, Any] = {
    "presence_penalty": 0.5,
    "frequency_penalty": -0.25,
    "top_logprobs": 2,
    "include": ["message.output_text.logprobs"],
    "service_tier": "flex",
    "max_tool_calls": 2,
    "safety_identifier": "user-hash-1",
    "prompt_cache_key": "cache-7",
    "prompt_cache_retention": "24h",
    "temperature": 0.2,
    "top_p": 0.9,
    "max_output_tokens": 64,
    "text": {"format": {"type": "text"}, "verbosity": "low"},
}
TOOL = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}


def assert_complete(response: dict[str, Any]) -> None:
    expected = set(Response.model_fields) | OPEN_RESPONSES_REQUIRED
    assert expected <= set(response), expected - set(response)
    Response.model_validate(response, strict=False)


@pytest.mark.parametrize("model", ["chat-model", "resp-model", "echo"])
def test_every_field_is_present_streamed_or_not(gateway: Gateway, model: str) -> None:
    url = f"{gateway.url}/v1/responses"
    created = httpx.post(url, json={"model": model, "input": "hi"}).json()
    assert_complete(created)
    assert created["presence_penalty"] == 0 and created["frequency_penalty"] == 0
    assert created["top_logprobs"] == 0 and created["service_tier"] == "default"
    assert created["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
    assert created["background"] is False and created["conversation"] is None
    assert_complete(httpx.get(f"{url}/{created['id']}").json())
    with httpx.stream("POST", url, json={"model": model, "input": "hi", "stream": True}) as events:
        lifecycle = [
            event["response"]
            for line in events.iter_lines()
            if line.startswith("data: ")
            for event in [__import__("json").loads(line[6:])]
            if "response" in event
        ]
    assert len(lifecycle) == 3  # created, in_progress, completed
    for response in lifecycle:
        assert_complete(response)


def test_request_values_come_back_and_reach_a_chat_upstream(gateway: Gateway) -> None:
    client = gateway.client()
    gateway.fake.script(Reply(text="the answer is here"))
    penalties = {key: SETTINGS[key] for key in ("presence_penalty", "frequency_penalty")}
    response = client.responses.create(
        model="chat-model",
        input="question",
        tools=[TOOL],
        extra_body=penalties,  # not parameters of the SDK's create(), fields of the object
        **{key: value for key, value in SETTINGS.items() if key not in penalties},
    )
    echoed = response.model_dump()
    for key, value in SETTINGS.items():
        if key not in ("include", "text"):
            assert echoed[key] == value, key
    assert echoed["text"] == {"format": {"type": "text"}, "verbosity": "low"}
    assert echoed["service_tier"] == "flex"
    tools = [tool.model_dump(exclude_unset=True) for tool in response.tools]
    assert tools == [{**TOOL, "description": None, "strict": True}]
    assert client.responses.retrieve(response.id).model_dump() == echoed
    sent = gateway.fake.last
    for key in (
        "presence_penalty",
        "frequency_penalty",
        "top_logprobs",
        "safety_identifier",
        "service_tier",
        "prompt_cache_key",
    ):
        assert sent[key] == SETTINGS[key], key
    assert sent["logprobs"] is True and sent["max_tokens"] == 64
    assert sent["tools"][0]["function"].get("strict") is None  # the client's tool, as sent
    logprobs = response.output[0].content[0].logprobs  # type: ignore[union-attr]
    assert [entry.token for entry in logprobs or []] == words("the answer is here")
    assert all(len(entry.top_logprobs) == 2 for entry in logprobs or [])


def test_logprobs_arrive_with_each_streamed_delta(gateway: Gateway) -> None:
    client = gateway.client()
    gateway.fake.script(Reply(text="one two three"))
    events = list(
        client.responses.create(
            model="chat-model",
            input="count",
            stream=True,
            top_logprobs=1,
            include=["message.output_text.logprobs"],
        )
    )
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert [d.logprobs[0].token for d in deltas] == words("one two three")
    done = next(e for e in events if e.type == "response.output_text.done")
    assert [entry.token for entry in done.logprobs or []] == words("one two three")
    final = events[-1].response  # type: ignore[union-attr]
    assert len(final.output[0].content[0].logprobs or []) == 3  # type: ignore[union-attr]


def test_without_include_no_logprobs_are_asked_for(gateway: Gateway) -> None:
    gateway.client().responses.create(model="chat-model", input="x", top_logprobs=3)
    assert "logprobs" not in gateway.fake.last and "top_logprobs" not in gateway.fake.last


@pytest.mark.parametrize(
    ("change", "param", "code"),
    [
        ({"max_output_tokens": 8}, "max_output_tokens", "integer_below_min_value"),
        ({"temperature": 2.5}, "temperature", "decimal_above_max_value"),
        ({"top_p": -0.1}, "top_p", "decimal_below_min_value"),
        ({"top_logprobs": 21}, "top_logprobs", "integer_above_max_value"),
        ({"presence_penalty": 3}, "presence_penalty", "decimal_above_max_value"),
        ({"max_tool_calls": 0}, "max_tool_calls", "integer_below_min_value"),
        ({"service_tier": "gold"}, "service_tier", "invalid_value"),
        ({"truncation": "sometimes"}, "truncation", "invalid_value"),
        ({"include": ["everything"]}, "include[0]", "invalid_value"),
        ({"tool_choice": "invalid_choice"}, "tool_choice", "invalid_value"),
        ({"tools": [{"type": "function"}]}, "tools[0].name", "missing_required_parameter"),
        ({"reasoning": {"effort": "extreme"}}, "reasoning.effort", "invalid_value"),
        ({"text": {"format": {"type": "yaml"}}}, "text.format.type", "invalid_value"),
        ({"temperature": "warm"}, "temperature", "invalid_type"),
        ({"safety_identifier": "x" * 65}, "safety_identifier", "string_above_max_length"),
        ({"previous_response_id": "abc"}, "previous_response_id", "invalid_value"),
        ({"conversation": "abc"}, "conversation", "invalid_value"),
        ({"model": None}, "model", "invalid_type"),
    ],
)
def test_validation_names_the_param_with_openais_code(
    gateway: Gateway, change: dict[str, Any], param: str, code: str
) -> None:
    body = {"model": "echo", "input": "x", **change}
    response = httpx.post(f"{gateway.url}/v1/responses", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)


def test_unknown_top_level_fields_are_tolerated(gateway: Gateway) -> None:
    body = {"model": "echo", "input": "x", "a_field_from_the_future": {"x": 1}}
    assert httpx.post(f"{gateway.url}/v1/responses", json=body).status_code == 200
