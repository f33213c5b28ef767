"""The built-in tools the client runs (shell, local_shell, apply_patch, computer) on the chat
and Messages wires: offered as functions, called back as the native items (streamed with
OpenAI's events for them), their outputs read back as the call's result, on stored chains
and stateless input alike. The strict ``openai`` SDK is the client."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from .fake_anthropic import AnthropicReply, FakeAnthropic
from .fake_upstream import FakeUpstream, Reply
from .tool_wires import MODELS, PNG, SCREENSHOT, Wires, wires_gateway

pytestmark = [pytest.mark.api]


@dataclass(frozen=True)
class Case:
    tool: dict[str, Any]
    function: str  # the function it is offered as
    arguments: dict[str, Any]  # what the model calls it with
    item: Callable[[Any], None]  # checks the native call item
    output: Callable[[str], dict[str, Any]]  # the client's output item, by call id
    result: str  # what the model reads of the output (text, or "image")


def _shell_call(item: Any) -> None:
    assert item.type == "shell_call" and item.status == "completed"
    assert item.action.commands == ["ls -la", "pwd"]
    assert (item.action.timeout_ms, item.action.max_output_length) == (5000, None)


def _local_shell_call(item: Any) -> None:
    assert item.type == "local_shell_call" and item.status == "completed"
    assert (item.action.type, item.action.command) == ("exec", ["ls", "-la"])


def _patch_call(item: Any) -> None:
    assert item.type == "apply_patch_call" and item.status == "completed"
    assert item.operation.type == "create_file"
    assert (item.operation.path, item.operation.diff) == ("hello.txt", "+hello\n")


def _computer_call(item: Any) -> None:
    assert item.type == "computer_call" and item.status == "completed"
    assert (item.action.type, item.action.x, item.action.y) == ("click", 10, 20)
    assert item.action.button == "left" and item.pending_safety_checks == []


SHELL_OUTPUT = [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]
CASES = {
    "shell": Case(
        {"type": "shell", "environment": {"type": "local"}},
        "shell",
        {"commands": ["ls -la", "pwd"], "timeout_ms": 5000},
        _shell_call,
        lambda cid: {"type": "shell_call_output", "call_id": cid, "output": SHELL_OUTPUT},
        json.dumps(SHELL_OUTPUT),
    ),
    "local_shell": Case(
        {"type": "local_shell"},
        "local_shell",
        {"command": ["ls", "-la"]},
        _local_shell_call,
        lambda cid: {"type": "local_shell_call_output", "call_id": cid, "output": "a.txt\n"},
        "a.txt\n",
    ),
    "apply_patch": Case(
        {"type": "apply_patch"},
        "apply_patch",
        {"type": "create_file", "path": "hello.txt", "diff": "+hello\n"},
        _patch_call,
        lambda cid: {
            "type": "apply_patch_call_output",
            "call_id": cid,
            "status": "completed",
            "output": "Created hello.txt",
        },
        json.dumps({"status": "completed", "output": "Created hello.txt"}),
    ),
    "computer_use_preview": Case(
        {
            "type": "computer_use_preview",
            "display_width": 1024,
            "display_height": 768,
            "environment": "browser",
        },
        "computer",
        {"type": "click", "x": 10, "y": 20, "button": "left"},
        _computer_call,
        lambda cid: {
            "type": "computer_call_output",
            "call_id": cid,
            "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
        },
        "image",
    ),
}


@pytest.fixture
def wires(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic_upstream: tuple[FakeAnthropic, str],
    tmp_path: Path,
) -> Iterator[Wires]:
    with wires_gateway(fake_upstream, anthropic_upstream, tmp_path) as made:
        yield made


def script_call(wires: Wires, wire: str, function: str, arguments: dict[str, Any]) -> str:
    """The fake model of ``wire`` calls ``function`` once, then answers "Done."; its call id."""
    if wire == "anthropic":
        wires.claude.script(
            AnthropicReply(tool_uses=[("toolu_1", function, arguments)]),
            AnthropicReply(text="Done."),
        )
        return "toolu_1"
    wires.chat.script(
        Reply(tool_calls=[("call_1", function, json.dumps(arguments))], finish_reason="tool_calls"),
        Reply(text="Done."),
    )
    return "call_1"


def create(client: openai.OpenAI, stream: bool, **request: Any) -> Any:
    """A response, whole or rebuilt by the SDK's stream helper (then checked against the
    events and the stored response)."""
    if not stream:
        return client.responses.create(**request)
    with client.responses.stream(**request) as events:
        seen = list(events)
        final = events.get_final_response()
    kinds = [(e.type, getattr(getattr(e, "item", None), "type", None)) for e in seen]
    for item in final.output:
        if item.type.endswith("_call"):
            assert ("response.output_item.added", item.type) in kinds
            assert ("response.output_item.done", item.type) in kinds
    assert [e.sequence_number for e in seen] == list(range(len(seen)))
    if request.get("store", True):
        stored = client.responses.retrieve(final.id)
        assert dumped(stored.output) == dumped(final.output)
    return final


def dumped(items: list[Any]) -> list[dict[str, Any]]:
    """Output items as JSON, without what the SDK's parsing adds (``parsed``)."""
    found = [item.model_dump() for item in items]
    for item in found:
        for part in item.get("content") or []:
            part.pop("parsed", None)
    return found


def offered(wires: Wires, wire: str, first: bool = True) -> dict[str, Any]:
    """What the model of ``wire`` was offered and forced to, on its first request."""
    if wire == "anthropic":
        body = wires.claude.requests[0]
        return {
            "tools": {t["name"]: t for t in body["tools"]},
            "choice": body["tool_choice"],
        }
    body = wires.chat.requests[0]
    return {
        "tools": {t["function"]["name"]: t["function"] for t in body["tools"]},
        "choice": body["tool_choice"],
    }


def received_result(wires: Wires, wire: str, call_id: str, arguments: dict[str, Any]) -> Any:
    """The call and its result as the model of ``wire`` read them on the second request."""
    if wire == "anthropic":
        messages = wires.claude.last["messages"]
        use = next(b for b in messages[-2]["content"] if b["type"] == "tool_use")
        assert (use["id"], use["input"]) == (call_id, arguments)
        result = messages[-1]["content"][0]
        assert (result["type"], result["tool_use_id"]) == ("tool_result", call_id)
        content = result["content"]
        if isinstance(content, list) and content[0]["type"] == "image":
            source = {"type": "base64", "media_type": "image/png", "data": PNG}
            assert content[0]["source"] == source
            return "image"
        return content
    messages = wires.chat.last["messages"]
    calls = [m for m in messages if m.get("tool_calls")]
    assert json.loads(calls[-1]["tool_calls"][0]["function"]["arguments"]) == arguments
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["tool_call_id"] == call_id
    if messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
        assert messages[-1]["content"] == [
            {"type": "image_url", "image_url": {"url": SCREENSHOT, "detail": "auto"}}
        ]
        return "image"
    return tool["content"]


@pytest.mark.parametrize("chain", ["stored", "stateless"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("wire", ["chat_completions", "anthropic"])
@pytest.mark.parametrize("kind", list(CASES))
def test_a_builtin_call_comes_back_native_and_its_output_goes_back(
    wires: Wires, kind: str, wire: str, stream: bool, chain: str
) -> None:
    case = CASES[kind]
    call_id = script_call(wires, wire, case.function, case.arguments)
    client = wires.gateway.client()
    request: dict[str, Any] = {
        "model": MODELS[wire],
        "tools": [case.tool],
        "tool_choice": {"type": kind} if kind != "local_shell" else "auto",
        "store": chain == "stored",
    }
    asked: list[Any] = [{"type": "message", "role": "user", "content": "Do it."}]
    first = create(client, stream, input=asked, **request)
    [item] = first.output
    case.item(item)
    assert item.call_id == call_id and item.id
    seen = offered(wires, wire)
    assert set(seen["tools"]) == {case.function}
    if kind != "local_shell":  # tool_choice naming the type forces its function
        forced: dict[str, Any] = {"type": "tool", "name": case.function}
        if wire != "anthropic":
            forced = {"type": "function", "function": {"name": case.function}}
        assert seen["choice"] == forced
    follow: dict[str, Any]
    if chain == "stored":
        follow = {"input": [case.output(call_id)], "previous_response_id": first.id}
    else:
        native = item.model_dump(exclude_none=True)
        follow = {"input": [*asked, native, case.output(call_id)]}
    second = create(client, stream, **request, **follow)
    assert second.output_text == "Done."
    assert received_result(wires, wire, call_id, case.arguments) == case.result


def test_the_computer_function_tells_the_model_the_display(wires: Wires) -> None:
    script_call(wires, "chat_completions", "computer", {"type": "screenshot"})
    client = wires.gateway.client()
    first = client.responses.create(
        model="chat-model", input="Look.", tools=[CASES["computer_use_preview"].tool]
    )
    assert first.output[0].type == "computer_call"
    assert first.output[0].action.type == "screenshot"
    described = offered(wires, "chat_completions")["tools"]["computer"]["description"]
    assert "1024x768 pixels (browser)" in described


def test_a_screenshot_by_file_id_is_refused_naming_it(wires: Wires) -> None:
    call = {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "c1",
        "action": {"type": "screenshot"},
        "pending_safety_checks": [],
        "status": "completed",
    }
    output = {
        "type": "computer_call_output",
        "call_id": "c1",
        "output": {"type": "computer_screenshot", "file_id": "file_1"},
    }
    client = wires.gateway.client()
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(
            model="chat-model", input=[call, output], tools=[{"type": "computer"}]
        )
    assert refused.value.body["param"] == "input[1].output"  # type: ignore[index]
    assert wires.chat.requests == []


def test_an_output_that_answers_no_call_is_refused(wires: Wires) -> None:
    output = CASES["shell"].output("call_nowhere")
    client = wires.gateway.client()
    with pytest.raises(openai.BadRequestError, match="call_nowhere"):
        client.responses.create(model="chat-model", input=[output], tools=[CASES["shell"].tool])
    assert wires.chat.requests == []
