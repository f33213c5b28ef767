"""The Open Responses compliance suite's seventeen tests, rebuilt as raw HTTP and WebSocket
frames on the Chat Completions and Responses wires, each under the suite's own id.

Every answer is a complete ``ResponseResource`` (every field the spec requires, the SDK's
strict types) with the status and items the suite expects, and every streamed event is
typed. The fake upstreams make the tool call the suite asks for: offered ``get_weather`` and
asked by the user, they call it; so the cases need no script and may run in any order. The
Messages wire (a Claude deployment) is run too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from gateway import create_app

from .conftest import gateway_config
from .console_data import PIXEL
from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve
from .test_response_object import assert_complete
from .test_websocket import TERMINAL, ws_url

pytestmark = [pytest.mark.api]

# The suite's tests, by id and name, in its order.
SUITE = {
    "basic-response": "Basic Text Response",
    "assistant-phase": "Assistant Message Phase",
    "response-output-phase-schema": "Response Output Phase Schema",
    "streaming-response": "Streaming Response",
    "websocket-response": "WebSocket Response",
    "websocket-sequential-responses": "WebSocket Sequential Responses",
    "websocket-continuation": "WebSocket Continuation",
    "websocket-reconnect-store-false-recovery": "WebSocket Store False Reconnect Recovery",
    "websocket-previous-response-not-found": "WebSocket Missing Previous Response",
    "websocket-failed-continuation-evicts-cache": "WebSocket Failed Continuation Evicts Cache",
    "websocket-compact-new-chain": "WebSocket Compact New Chain",
    "system-prompt": "System Prompt",
    "tool-calling": "Tool Calling",
    "image-input": "Image Input",
    "multi-turn": "Multi-turn Conversation",
    "compact-response": "Compaction Endpoint",
    "compact-missing-model": "Compaction Missing Required Model",
}
MODELS = ["chat-model", "resp-model", "claude"]
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. Boston, MA"}
        },
        "required": ["location"],
    },
}
SF = '{"location": "San Francisco, CA"}'


class ToolCallingUpstream(FakeUpstream):
    """The fake provider, which calls ``get_weather`` when it is offered and the user spoke
    last (a scripted reply still comes first)."""

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    def _next(self, body: dict[str, Any], default_text: str) -> Reply:
        with self._lock:
            scripted = bool(self.replies)
        reply = super()._next(body, default_text)
        tools = body.get("tools") or []
        offered = [t.get("name") or (t.get("function") or {}).get("name") for t in tools]
        items = body.get("messages") or body.get("input") or [{}]
        asked = isinstance(items, list) and items[-1].get("role") == "user"
        if scripted or "get_weather" not in offered or not asked:
            return reply
        with self._lock:
            self._calls += 1
            call = f"call_weather_{self._calls}"
        return Reply(tool_calls=[(call, "get_weather", SF)], finish_reason="tool_calls")


class ToolCallingClaude(FakeAnthropic):
    """The fake Messages API, which calls ``get_weather`` as :class:`ToolCallingUpstream`."""

    def _accept(self, request: Any, body: Any) -> tuple[dict[str, Any], AnthropicReply]:
        with self._lock:
            scripted = bool(self.replies)
        body, reply = super()._accept(request, body)
        last = body["messages"][-1]
        blocks = last["content"] if isinstance(last["content"], list) else []
        answered = any(block.get("type") == "tool_result" for block in blocks)
        offered = [tool.get("name") for tool in body.get("tools") or []]
        if scripted or "get_weather" not in offered or last["role"] != "user" or answered:
            return body, reply
        location = json.loads(SF)
        return body, AnthropicReply(tool_uses=[("toolu_weather", "get_weather", location)])


class Suite:
    """The gateway against :class:`ToolCallingUpstream` and :class:`ToolCallingClaude`,
    over real HTTP; ``fake`` is the upstream of the model under test."""

    def __init__(self, url: str, fake: FakeUpstream | FakeAnthropic) -> None:
        self.url = url
        self.fake = fake

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.url}/v1{path}", json=body, timeout=30)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.post("/responses", body)
        assert answer.status_code == 200, answer.text
        response: dict[str, Any] = answer.json()
        return response

    def streamed(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        with httpx.stream(
            "POST", f"{self.url}/v1/responses", json={**body, "stream": True}, timeout=30
        ) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/event-stream")
            lines = [line[6:] for line in answer.iter_lines() if line.startswith("data: ")]
        events = [json.loads(line) for line in lines]
        typed(events)
        assert events[-1]["type"] == "response.completed"
        return events, events[-1]["response"]

    def socket(self) -> Connection:
        return connect(ws_url(self.url), additional_headers={"Authorization": "Bearer k"})


def typed(events: list[dict[str, Any]]) -> None:
    """Each event one of the SDK's stream events, numbered from 0 without a gap."""
    assert events, "no streaming events"
    for event in events:
        EVENTS.validate_python(event, strict=False)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def socket_turn(socket: Connection, frame: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``response.create`` on ``socket``, its events up to its terminal one."""
    socket.send(json.dumps({"type": "response.create", **frame}))
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] not in TERMINAL:
        events.append(json.loads(socket.recv(timeout=30)))
    return events


def completed_on_socket(events: list[dict[str, Any]]) -> dict[str, Any]:
    typed(events)
    assert events[-1]["type"] == "response.completed", events[-1]
    response: dict[str, Any] = events[-1]["response"]
    assert_complete(response)
    assert response["status"] == "completed" and response["output"]
    return response


def error_code(events: list[dict[str, Any]]) -> str | None:
    last = events[-1]
    error = last.get("error") or (last.get("response") or {}).get("error") or {}
    code = error.get("code")
    return code if isinstance(code, str) else None


def completed(response: dict[str, Any]) -> None:
    assert_complete(response)
    assert response["status"] == "completed", response["status"]
    assert response["output"], "no output items"


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


def assistant(text: str, phase: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "message", "role": "assistant", "content": text}
    return item if phase is None else {**item, "phase": phase}


def sent_text(fake: FakeUpstream | FakeAnthropic) -> str:
    """What the upstream received last, as JSON."""
    return json.dumps(fake.last)


# -- the cases, one per test of the suite ---------------------------------------------------


def basic_response(suite: Suite, model: str) -> None:
    completed(suite.create({"model": model, "input": [user("Say hello in exactly 3 words.")]}))


def assistant_phase(suite: Suite, model: str) -> None:
    history = [
        assistant("I should answer with the saved number.", "commentary"),
        assistant("The number is four.", "final_answer"),
        user("Repeat only the number."),
    ]
    completed(suite.create({"model": model, "input": history}))
    assert "The number is four." in sent_text(suite.fake)


def response_output_phase_schema(suite: Suite, model: str) -> None:
    """Assistant output labelled ``commentary`` and ``final_answer`` in a complete response:
    as a Responses upstream made it, or as a chat client's phased items read back."""
    phased = [("msg_c", "commentary", "I am checking."), ("msg_f", "final_answer", "Four.")]
    if model == "resp-model":
        assert isinstance(suite.fake, FakeUpstream)
        suite.fake.script(
            Reply(
                items=[
                    {
                        "id": item_id,
                        "type": "message",
                        "status": "completed",
                        "role": "assistant",
                        "phase": phase,
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                    for item_id, phase, text in phased
                ]
            )
        )
        response = suite.create({"model": model, "input": [user("What is 2 + 2?")]})
        completed(response)
        labelled = [(item["type"], item.get("phase")) for item in response["output"]]
        fetched = httpx.get(f"{suite.url}/v1/responses/{response['id']}").json()
        assert fetched["output"] == response["output"]
    else:
        input_items = [assistant(text, phase) for _, phase, text in phased]
        response = suite.create({"model": model, "input": [*input_items, user("And now?")]})
        completed(response)
        listed = httpx.get(
            f"{suite.url}/v1/responses/{response['id']}/input_items", params={"order": "asc"}
        ).json()["data"]
        labelled = [(item["type"], item.get("phase")) for item in listed]
    for phase in ("commentary", "final_answer"):
        assert ("message", phase) in labelled, labelled


def streaming_response(suite: Suite, model: str) -> None:
    _, response = suite.streamed({"model": model, "input": [user("Count from 1 to 5.")]})
    completed(response)


def websocket_response(suite: Suite, model: str) -> None:
    with suite.socket() as socket:
        completed_on_socket(
            socket_turn(socket, {"model": model, "input": [user("Count from 1 to 3.")]})
        )


def websocket_sequential_responses(suite: Suite, model: str) -> None:
    with suite.socket() as socket:
        first = completed_on_socket(
            socket_turn(socket, {"model": model, "store": False, "input": "Reply: first"})
        )
        second = completed_on_socket(
            socket_turn(socket, {"model": model, "store": False, "input": "Reply: second"})
        )
    assert first["id"] != second["id"]


def websocket_continuation(suite: Suite, model: str) -> None:
    with suite.socket() as socket:
        first = completed_on_socket(
            socket_turn(socket, {"model": model, "store": False, "input": "The code word: cobalt."})
        )
        follow = {"model": model, "store": False, "previous_response_id": first["id"]}
        completed_on_socket(socket_turn(socket, {**follow, "input": "What is the code word?"}))
    assert "cobalt" in sent_text(suite.fake)


def websocket_reconnect_store_false_recovery(suite: Suite, model: str) -> None:
    with suite.socket() as socket:
        first = completed_on_socket(
            socket_turn(socket, {"model": model, "store": False, "input": "Code word: copper."})
        )
    with suite.socket() as socket:
        lost = socket_turn(
            socket,
            {"model": model, "store": False, "previous_response_id": first["id"], "input": "Go"},
        )
        assert error_code(lost) == "previous_response_not_found", lost[-1]
        recovery = [user("Start a new response and reply with exactly: recovered")]
        completed_on_socket(
            socket_turn(socket, {"model": model, "store": False, "input": recovery})
        )


def websocket_previous_response_not_found(suite: Suite, model: str) -> None:
    with suite.socket() as socket:
        events = socket_turn(
            socket,
            {
                "model": model,
                "store": False,
                "previous_response_id": "resp_openresponses_missing_1",
                "input": "This should fail.",
            },
        )
    assert error_code(events) == "previous_response_not_found", events[-1]


def websocket_failed_continuation_evicts_cache(suite: Suite, model: str) -> None:
    with suite.socket() as socket:
        first = completed_on_socket(
            socket_turn(socket, {"model": model, "store": False, "input": "Code word: ember."})
        )
        follow = {"model": model, "store": False, "previous_response_id": first["id"]}
        orphan = {
            "type": "function_call_output",
            "call_id": "call_openresponses_missing",
            "output": "No matching tool call exists in the previous response.",
        }
        failed = socket_turn(socket, {**follow, "input": [orphan]})
        assert failed[-1]["type"] in ("error", "response.failed"), failed[-1]
        retried = socket_turn(socket, {**follow, "input": "Reply with exactly: stale"})
    assert error_code(retried) == "previous_response_not_found", retried[-1]


def websocket_compact_new_chain(suite: Suite, model: str) -> None:
    conversation = [
        user("Remember the compaction code word: slate."),
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "OK."}],
        },
        user("Compress this conversation for later continuation."),
    ]
    compacted = suite.post("/responses/compact", {"model": model, "input": conversation})
    assert compacted.status_code == 200, compacted.text
    window = compacted.json()["output"]
    assert isinstance(window, list) and window[-1]["type"] == "compaction"
    frame = {
        "model": model,
        "store": False,
        "input": [*window, user("Continue from here. Reply with exactly: compacted")],
        "tools": [],
    }
    with suite.socket() as socket:
        completed_on_socket(socket_turn(socket, frame))


def system_prompt(suite: Suite, model: str) -> None:
    pirate = {"type": "message", "role": "system", "content": "You are a pirate."}
    completed(suite.create({"model": model, "input": [pirate, user("Say hello.")]}))
    assert "You are a pirate." in sent_text(suite.fake)


def tool_calling(suite: Suite, model: str) -> None:
    asked = [user("What's the weather like in San Francisco?")]
    response = suite.create({"model": model, "input": asked, "tools": [WEATHER]})
    assert_complete(response)
    [call] = [item for item in response["output"] if item["type"] == "function_call"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", json.loads(SF))
    _, streamed = suite.streamed({"model": model, "input": asked, "tools": [WEATHER]})
    assert [item["type"] for item in streamed["output"]] == ["function_call"]


def image_input(suite: Suite, model: str) -> None:
    content = [
        {"type": "input_text", "text": "What do you see in this image?"},
        {"type": "input_image", "image_url": PIXEL},
    ]
    message = {"type": "message", "role": "user", "content": content}
    completed(suite.create({"model": model, "input": [message]}))
    assert PIXEL.split(",")[1] in sent_text(suite.fake)  # a data URL, or its base64 alone


def multi_turn(suite: Suite, model: str) -> None:
    history = [user("My name is Alice."), assistant("Hello Alice!"), user("What is my name?")]
    completed(suite.create({"model": model, "input": history}))
    assert "My name is Alice." in sent_text(suite.fake)


def compact_response(suite: Suite, model: str) -> None:
    body = {
        "model": model,
        "prompt_cache_key": "openresponses-compact-test",
        "input": [
            user("We agreed to launch on Tuesday and notify support first."),
            assistant("Understood. The launch is Tuesday, with support notified beforehand."),
        ],
    }
    answer = suite.post("/responses/compact", body)
    assert answer.status_code == 200, answer.text
    compacted = answer.json()
    assert compacted["object"] == "response.compaction"
    assert {"id", "created_at", "output", "usage"} <= set(compacted)
    usage = compacted["usage"]
    assert usage["input_tokens_details"]["cached_tokens"] >= 0
    assert usage["output_tokens_details"]["reasoning_tokens"] >= 0
    assert "compaction" in [item["type"] for item in compacted["output"]]


def compact_missing_model(suite: Suite, model: str) -> None:
    answer = suite.post("/responses/compact", {"input": [user("Compact this conversation.")]})
    assert answer.status_code in (400, 422)
    assert answer.json()["error"]["param"] == "model"
    assert suite.fake.requests == []


CASES: dict[str, Callable[[Suite, str], None]] = {
    "basic-response": basic_response,
    "assistant-phase": assistant_phase,
    "response-output-phase-schema": response_output_phase_schema,
    "streaming-response": streaming_response,
    "websocket-response": websocket_response,
    "websocket-sequential-responses": websocket_sequential_responses,
    "websocket-continuation": websocket_continuation,
    "websocket-reconnect-store-false-recovery": websocket_reconnect_store_false_recovery,
    "websocket-previous-response-not-found": websocket_previous_response_not_found,
    "websocket-failed-continuation-evicts-cache": websocket_failed_continuation_evicts_cache,
    "websocket-compact-new-chain": websocket_compact_new_chain,
    "system-prompt": system_prompt,
    "tool-calling": tool_calling,
    "image-input": image_input,
    "multi-turn": multi_turn,
    "compact-response": compact_response,
    "compact-missing-model": compact_missing_model,
}


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[ToolCallingUpstream, ToolCallingClaude, str, str]]:
    fake, claude = ToolCallingUpstream(), ToolCallingClaude()
    with serve(fake.app) as url, serve(claude.app) as claude_url:
        yield fake, claude, url, claude_url


@pytest.fixture(params=MODELS)
def model(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def suite(
    upstreams: tuple[ToolCallingUpstream, ToolCallingClaude, str, str],
    tmp_path: Path,
    model: str,
) -> Iterator[Suite]:
    fake, claude, url, claude_url = upstreams
    fake.reset()
    claude.reset()
    wire = {"base_url": f"{url}/v1", "api_key": UPSTREAM_KEY}
    config = gateway_config(
        url,
        tmp_path / "sessions.db",
        providers={
            "fake-chat": {"wire_api": "chat_completions", **wire},
            "fake-responses": {"wire_api": "responses", **wire},
            "claude": {"wire_api": "anthropic", "base_url": claude_url, "api_key": ANTHROPIC_KEY},
            "echo": {"wire_api": "echo"},
        },
        models={
            "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
            "resp-model": {"provider": "fake-responses", "upstream_model": "upstream-resp"},
            "claude": {"provider": "claude", "upstream_model": "claude-sonnet-4-5"},
        },
    )
    with serve(create_app(config)) as gateway_url:
        yield Suite(gateway_url, claude if model == "claude" else fake)


def test_every_test_of_the_suite_has_its_case() -> None:
    assert list(CASES) == list(SUITE)
    assert len(SUITE) == 17


@pytest.mark.parametrize("case", SUITE)
def test_the_case_passes(suite: Suite, model: str, case: str) -> None:
    CASES[case](suite, model)


def test_the_suite_run_at_once_passes(suite: Suite, model: str) -> None:
    """The suite sends its tests all at once: every case at the same time, on one gateway."""
    failures: dict[str, BaseException] = {}

    def run(case: str) -> None:
        try:
            CASES[case](suite, model)
        except BaseException as error:  # reported below, by case
            failures[case] = error

    # Cases that read what the fake received last need it to themselves.
    alone = {
        "assistant-phase",
        "system-prompt",
        "image-input",
        "multi-turn",
        "websocket-continuation",
        "compact-missing-model",
        "response-output-phase-schema",
    }
    threads = [threading.Thread(target=run, args=(case,)) for case in SUITE if case not in alone]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not [thread for thread in threads if thread.is_alive()], "a case did not end"
    assert not failures, {case: repr(error) for case, error in failures.items()}


def test_a_streamed_tool_call_has_its_argument_events(suite: Suite, model: str) -> None:
    asked = [user("What's the weather like in San Francisco?")]
    events, _ = suite.streamed({"model": model, "input": asked, "tools": [WEATHER]})
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds
    for kind in ("response.output_item.added", "response.output_item.done"):
        assert any(e["type"] == kind and e["item"]["type"] == "function_call" for e in events)


def test_previous_response_id_recalls_the_first_turn(suite: Suite, model: str) -> None:
    first = suite.create({"model": model, "input": [user("Code word: papaya.")]})
    second = suite.create(
        {"model": model, "input": [user("Which?")], "previous_response_id": first["id"]}
    )
    completed(second)
    sent = sent_text(suite.fake)
    assert sent.index("Code word: papaya.") < sent.index("Which?")
