"""What the Messages API refuses and the Responses API takes: the Anthropic wire makes it
valid where the meaning is clear, else refuses it naming the parameter before anything is
stored or sent. Through the gateway, against the strict fake Messages API."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from .conftest import Gateway
from .fake_anthropic import AnthropicReply, FakeAnthropic
from .test_anthropic_wire import WEATHER, claude  # noqa: F401

pytestmark = [pytest.mark.api]


@pytest.fixture
def wire(claude: tuple[Gateway, FakeAnthropic]) -> tuple[Gateway, FakeAnthropic]:  # noqa: F811
    """The gateway and the strict fake it sends ``claude`` to, fresh for the test."""
    return claude


PDF = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 x").decode()
CALL = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}


def post(gateway: Gateway, **body: Any) -> httpx.Response:
    return httpx.post(f"{gateway.url}/v1/responses", json={"model": "claude", **body}, timeout=30)


def refused(gateway: Gateway, fake: FakeAnthropic, param: str, **body: Any) -> str:
    """Assert the request is a 400 naming ``param``, nothing sent or stored; its message."""
    rows = gateway.stored_rows()
    answer = post(gateway, **body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param), error
    assert error["code"] != "upstream_rejected"
    assert fake.requests == [] and gateway.stored_rows() == rows
    return str(error["message"])


def completed(gateway: Gateway, **body: Any) -> dict[str, Any]:
    answer = post(gateway, **body)
    assert answer.status_code == 200, answer.text
    made: dict[str, Any] = answer.json()
    assert made["status"] == "completed"
    return made


@pytest.mark.parametrize(
    "history",
    [
        [{"role": "assistant", "content": "How can I help?"}, {"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, CALL, OUTPUT],
        [{"role": "user", "content": " "}],
        [{"role": "system", "content": "Only a system prompt."}],
    ],
    ids=["assistant-first", "system-then-tool", "whitespace-only", "no-message"],
)
def test_a_history_that_does_not_open_with_the_user_gets_a_placeholder_turn(
    wire: tuple[Gateway, FakeAnthropic], history: list[Any]
) -> None:
    gateway, fake = wire
    completed(gateway, input=history, tools=[WEATHER])
    first = fake.last["messages"][0]
    assert (first["role"], first["content"][0]["text"]) == ("user", ".")


def test_a_function_schema_without_a_type_is_sent_as_an_object_schema(
    wire: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = wire
    tool = {"type": "function", "name": "f", "parameters": {"properties": {"a": {}}}}
    completed(gateway, input="go", tools=[tool, {"type": "function", "name": "g"}])
    assert [t["input_schema"] for t in fake.last["tools"]] == [
        {"type": "object", "properties": {"a": {}}},
        {"type": "object", "properties": {}},
    ]


def test_a_function_schema_of_another_type_is_refused(
    wire: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = wire
    tool = {"type": "function", "name": "f", "parameters": {"type": "string"}}
    message = refused(gateway, fake, "tools[1].parameters", input="go", tools=[WEATHER, tool])
    assert "'object'" in message


@pytest.mark.parametrize(
    "tools",
    [
        [{"type": "custom", "name": "patch"},
         {"type": "custom", "name": "patch", "description": "b"}],
        [WEATHER, {**WEATHER, "description": "another"}],
        [{"type": "function", "name": "patch"}, {"type": "custom", "name": "patch"}],
        [{"type": "function", "name": "a__b"}, {"type": "namespace", "name": "a", "tools": [
            {"type": "function", "name": "b"}]}],
    ],
    ids=["two-custom", "two-functions", "function-and-custom", "namespaced"],
)  # fmt: skip
def test_two_different_tools_of_one_name_are_refused(
    wire: tuple[Gateway, FakeAnthropic], tools: list[Any]
) -> None:
    gateway, fake = wire
    param = "tools[1].tools[0].name" if tools[1]["type"] == "namespace" else "tools[1].name"
    assert "unique" in refused(gateway, fake, param, input="go", tools=tools)


def test_a_tool_offered_twice_alike_is_sent_once(wire: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = wire
    completed(gateway, input="go", tools=[WEATHER, WEATHER])
    assert [t["name"] for t in fake.last["tools"]] == ["get_weather"]


@pytest.mark.parametrize("role", ["system", "developer", "assistant"])
def test_a_file_outside_user_content_is_refused(
    wire: tuple[Gateway, FakeAnthropic], role: str
) -> None:
    gateway, fake = wire
    part = {"type": "input_file", "file_data": PDF, "filename": "a.pdf"}
    history = [{"role": role, "content": [{"type": "input_text", "text": "See"}, part]}]
    history.append({"role": "user", "content": "?"})
    refused(gateway, fake, "input[0].content[1]", input=history)


def test_a_file_in_user_content_is_sent(wire: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = wire
    part = {"type": "input_file", "file_data": PDF, "filename": "a.pdf"}
    completed(gateway, input=[{"role": "user", "content": [part]}])
    assert fake.last["messages"][0]["content"][0]["type"] == "document"


def test_a_tool_call_left_unanswered_is_refused(wire: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = wire
    history = [{"role": "user", "content": "Weather?"}, CALL, {"role": "user", "content": "?"}]
    refused(gateway, fake, "input[1]", input=history, tools=[WEATHER])


def test_an_answered_call_after_a_placeholder_round_trips(
    wire: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = wire
    fake.script(AnthropicReply(text="Sunny."))
    made = completed(gateway, input=[CALL, OUTPUT], tools=[WEATHER])
    assert made["output"][0]["content"][0]["text"] == "Sunny."
    roles = [m["role"] for m in fake.last["messages"]]
    assert roles == ["user", "assistant", "user"]


def test_an_answer_without_a_stop_reason_is_not_taken_as_complete(
    wire: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = wire
    fake.script(AnthropicReply(text="Half", no_stop_reason=True))
    whole = post(gateway, input="go")
    assert whole.status_code == 502, whole.text
    assert whole.json()["error"]["code"] == "upstream_invalid_response"
    assert "stop_reason" in whole.json()["error"]["message"]

    fake.script(AnthropicReply(text="Half", no_stop_reason=True))
    client = gateway.client()
    events = list(client.responses.create(model="claude", input="go", stream=True))
    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert failed.error is not None and "stop_reason" in failed.error.message
    assert client.responses.retrieve(failed.id).status == "failed"


@pytest.mark.parametrize(
    ("request_", "sent"),
    [
        ({"temperature": 0.3}, {"temperature": 0.3}),
        ({"temperature": 0, "top_p": 0.5}, {"temperature": 0, "top_p": 0.5}),
        ({"temperature": 0.3, "top_p": 0.5, "reasoning": {"effort": "low"}}, {}),
        ({"temperature": 0.3, "top_p": 0.97, "reasoning": {"effort": "low"}}, {"top_p": 0.97}),
    ],
    ids=["temperature", "both", "thinking-drops-both", "thinking-keeps-top-p"],
)
def test_sampling_reaches_the_messages_api_as_it_allows(
    wire: tuple[Gateway, FakeAnthropic], request_: dict[str, Any], sent: dict[str, Any]
) -> None:
    gateway, fake = wire
    completed(gateway, input="go", **request_)
    assert {k: fake.last[k] for k in ("temperature", "top_p") if k in fake.last} == sent
    assert ("thinking" in fake.last) == ("reasoning" in request_)


def test_a_temperature_above_the_messages_api_scale_is_refused(
    wire: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = wire
    assert "0 to 1" in refused(gateway, fake, "temperature", input="go", temperature=1.5)
