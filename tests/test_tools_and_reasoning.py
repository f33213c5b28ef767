"""Function calls, namespaces, hosted tools, reasoning and the Responses wire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Gateway
from .fake_upstream import Reply

pytestmark = [pytest.mark.api]

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _function_call_round_trip(gateway: Gateway, stream: bool) -> None:
    client = gateway.client()
    gateway.fake.script(
        Reply(
            tool_calls=[("call_A", "get_weather", '{"city": "Paris"}')], finish_reason="tool_calls"
        ),
        Reply(text="It is sunny in Paris."),
    )
    if stream:
        events = list(
            client.responses.create(
                model="chat-model", input="weather?", tools=[WEATHER], stream=True
            )  # type: ignore[list-item]
        )
        types = [e.type for e in events]
        assert "response.function_call_arguments.delta" in types
        assert "response.function_call_arguments.done" in types
        first = events[-1].response  # type: ignore[union-attr]
    else:
        first = client.responses.create(model="chat-model", input="weather?", tools=[WEATHER])  # type: ignore[list-item]
    [call] = first.output
    assert call.type == "function_call"
    assert (call.call_id, call.name, json.loads(str(call.arguments))) == (
        "call_A",
        "get_weather",
        {"city": "Paris"},
    )
    assert call.id is not None and call.id.startswith("fc_")
    assert gateway.fake.last["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER["parameters"],
            },
        }
    ]

    second = client.responses.create(
        model="chat-model",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_A", "output": "sunny"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.output_text == "It is sunny in Paris."
    messages = gateway.fake.last["messages"]
    assert messages[-2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_A",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_A", "content": "sunny"}


def test_function_call_round_trip(gateway: Gateway) -> None:
    _function_call_round_trip(gateway, stream=False)


def test_function_call_round_trip_streamed(gateway: Gateway) -> None:
    _function_call_round_trip(gateway, stream=True)


def test_parallel_calls_merge_into_one_assistant_message(gateway: Gateway) -> None:
    gateway.fake.script(
        Reply(
            tool_calls=[
                ("c1", "get_weather", '{"city":"A"}'),
                ("c2", "get_weather", '{"city":"B"}'),
            ]
        ),
    )
    client = gateway.client()
    first = client.responses.create(
        model="chat-model", input="two cities", tools=[WEATHER], stream=False
    )  # type: ignore[list-item]
    assert [o.call_id for o in first.output] == ["c1", "c2"]  # type: ignore[union-attr]
    client.responses.create(
        model="chat-model",
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": "c1", "output": "rain"},
            {"type": "function_call_output", "call_id": "c2", "output": "snow"},
        ],
    )
    messages = gateway.fake.last["messages"]
    assert [c["id"] for c in messages[-3]["tool_calls"]] == ["c1", "c2"]
    assert [m["tool_call_id"] for m in messages[-2:]] == ["c1", "c2"]


def test_namespaces_are_flattened(gateway: Gateway) -> None:
    tools: list[Any] = [
        {"type": "custom", "name": "apply_patch", "description": "freeform"},
        {
            "type": "namespace",
            "name": "files",
            "description": "file tools",
            "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}],
        },
        WEATHER,
    ]
    gateway.fake.script(Reply(tool_calls=[("c9", "files__read", "{}")]))
    client = gateway.client()
    first = client.responses.create(
        model="chat-model",
        input="read",
        tools=tools,
        tool_choice="auto",
        extra_body={"client_metadata": {"x": "y"}, "prompt_cache_key": "k", "include": []},
    )
    sent_names = [t["function"]["name"] for t in gateway.fake.last["tools"]]
    assert sent_names == ["apply_patch", "files__read", "get_weather"]
    assert "client_metadata" not in gateway.fake.last
    [call] = first.output
    assert call.type == "function_call"
    assert (call.name, call.namespace) == ("read", "files")
    assert len(first.tools) == 3  # the response echoes the tools as the client sent them
    client.responses.create(
        model="chat-model",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "c9", "output": "contents"}],
        tools=tools,
    )
    assert gateway.fake.last["messages"][-2]["tool_calls"][0]["function"]["name"] == "files__read"


def test_reasoning_content_becomes_a_reasoning_item_and_goes_back_upstream(
    gateway: Gateway,
) -> None:
    gateway.fake.script(Reply(reasoning="Let me think.", text="42"))
    client = gateway.client()
    first = client.responses.create(model="chat-model", input="answer?")
    assert [o.type for o in first.output] == ["reasoning", "message"]
    reasoning = first.output[0]
    assert reasoning.type == "reasoning" and reasoning.id.startswith("rs_")
    assert reasoning.content is not None and reasoning.content[0].text == "Let me think."
    client.responses.create(model="chat-model", input="why?", previous_response_id=first.id)
    assert gateway.fake.last["messages"][1] == {
        "role": "assistant",
        "content": "42",
        "reasoning_content": "Let me think.",
    }


def test_streamed_reasoning_events(gateway: Gateway) -> None:
    gateway.fake.script(Reply(reasoning="Thinking hard.", text="Done."))
    events = list(gateway.client().responses.create(model="chat-model", input="x", stream=True))
    types = [e.type for e in events]
    assert types.index("response.reasoning_text.delta") < types.index("response.output_text.delta")
    reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert reasoning == "Thinking hard."
    final = events[-1].response  # type: ignore[union-attr]
    assert [o.type for o in final.output] == ["reasoning", "message"]


def test_structured_output_and_sampling_parameters_are_translated(gateway: Gateway) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    gateway.client().responses.create(
        model="chat-model",
        input="json please",
        text={"format": {"type": "json_schema", "name": "thing", "schema": schema, "strict": True}},
        max_output_tokens=50,
        temperature=0.2,
        top_p=0.9,
        user="u-1",
    )
    sent = gateway.fake.last
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "thing", "schema": schema, "strict": True},
    }
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"], sent["user"]) == (
        50,
        0.2,
        0.9,
        "u-1",
    )


def test_images_go_upstream_as_image_url_parts(gateway: Gateway) -> None:
    image = {"type": "input_image", "image_url": "https://example.test/cat.png", "detail": "low"}
    gateway.client().responses.create(
        model="chat-model",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "what?"}, image]}],  # type: ignore[list-item]
    )
    assert gateway.fake.last["messages"][0]["content"] == [
        {"type": "text", "text": "what?"},
        {
            "type": "image_url",
            "image_url": {"url": "https://example.test/cat.png", "detail": "low"},
        },
    ]


def test_responses_wire_is_stateless_and_ids_are_the_gateways(gateway: Gateway) -> None:
    client = gateway.client()
    first = client.responses.create(model="resp-model", input="one", instructions="old")
    assert first.output[0].id != "msg_upstream_1" and first.output[0].id.startswith("msg_")
    assert first.output_text == "reply to: one"
    second = client.responses.create(
        model="resp-model", input="two", instructions="new", previous_response_id=first.id
    )
    sent = gateway.fake.last
    assert sent["store"] is False and "previous_response_id" not in sent
    assert sent["model"] == "upstream-resp" and sent["instructions"] == "new"
    assert [i["role"] for i in sent["input"]] == ["user", "assistant", "user"]
    assert all("id" not in item for item in sent["input"])
    assert gateway.fake.headers[-1]["authorization"] == "Bearer sk-upstream-secret-0123456789"
    assert second.usage is not None and second.usage.total_tokens == 9


def test_responses_wire_streaming_passes_events_through(gateway: Gateway) -> None:
    client = gateway.client()
    events = list(client.responses.create(model="resp-model", input="stream me", stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events][:2] == ["response.created", "response.in_progress"]
    final = events[-1].response  # type: ignore[union-attr]
    assert events[-1].type == "response.completed"
    item_ids = {getattr(e, "item_id", None) for e in events} - {None}
    assert item_ids == {final.output[0].id} and "msg_upstream_1" not in item_ids
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.output_text == "reply to: stream me"
    again = client.responses.create(model="resp-model", input="next", previous_response_id=final.id)
    assert again.status == "completed"


APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
}
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch"


@pytest.mark.parametrize("stream", [False, True])
def test_custom_tools_round_trip_as_functions_of_one_string(gateway: Gateway, stream: bool) -> None:
    gateway.fake.script(
        Reply(tool_calls=[("call_P", "apply_patch", json.dumps({"input": PATCH}))]),
        Reply(text="Patched."),
    )
    client = gateway.client()
    tools: Any = [APPLY_PATCH]
    if stream:
        events = list(
            client.responses.create(model="chat-model", input="patch it", tools=tools, stream=True)
        )
        done = [e for e in events if e.type == "response.custom_tool_call_input.done"]
        assert [e.input for e in done] == [PATCH]  # type: ignore[union-attr]
        first = events[-1].response  # type: ignore[union-attr]
    else:
        first = client.responses.create(model="chat-model", input="patch it", tools=tools)
    [function] = gateway.fake.last["tools"]
    assert function["function"]["name"] == "apply_patch"
    assert function["function"]["parameters"]["required"] == ["input"]
    assert "start: /.+/" in function["function"]["description"]
    [call] = first.output
    assert call.type == "custom_tool_call"
    assert (call.call_id, call.name, call.input) == ("call_P", "apply_patch", PATCH)
    client.responses.create(
        model="chat-model",
        previous_response_id=first.id,
        input=[{"type": "custom_tool_call_output", "call_id": "call_P", "output": "Done!"}],
        tools=tools,
    )
    messages = gateway.fake.last["messages"]
    assert json.loads(messages[-2]["tool_calls"][0]["function"]["arguments"]) == {"input": PATCH}
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_P", "content": "Done!"}
