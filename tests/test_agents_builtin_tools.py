"""The OpenAI Agents SDK's ``ShellTool``, ``ApplyPatchTool`` and ``ComputerTool`` on models
behind the chat and Messages wires: the model calls the function each is offered as, the
SDK runs the call (a fake executor, editor and computer here) and goes on; the model reads
the result (the screenshot as an image) on its next call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    ApplyPatchTool,
    AsyncComputer,
    ComputerTool,
    OpenAIResponsesModel,
    Runner,
    ShellTool,
    set_tracing_disabled,
)
from agents.editor import ApplyPatchOperation, ApplyPatchResult
from agents.tool import ShellCommandOutput, ShellCommandRequest, ShellResult
from openai import AsyncOpenAI

from .fake_anthropic import AnthropicReply, FakeAnthropic
from .fake_upstream import FakeUpstream, Reply
from .tool_wires import MODELS, PNG, SCREENSHOT, Wires, wires_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.system]


class Shell:
    """A fake local executor: records the commands, answers a listing."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def __call__(self, request: ShellCommandRequest) -> ShellResult:
        self.commands.append(list(request.data.action.commands))
        return ShellResult(output=[ShellCommandOutput(stdout="a.txt\n", stderr="")])


class Editor:
    """A fake editor: keeps the files in a dict."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        self.files[operation.path] = operation.diff or ""
        return ApplyPatchResult(output=f"Created {operation.path}")

    def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        return ApplyPatchResult(output=f"Updated {operation.path}")

    def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        return ApplyPatchResult(output=f"Deleted {operation.path}")


class Screen(AsyncComputer):
    """A fake browser: records the actions, every screenshot the same PNG."""

    def __init__(self) -> None:
        self.actions: list[tuple[Any, ...]] = []

    @property
    def environment(self) -> Any:
        return "browser"

    @property
    def dimensions(self) -> tuple[int, int]:
        return (1024, 768)

    async def screenshot(self) -> str:
        return PNG

    async def click(self, x: int, y: int, button: Any) -> None:
        self.actions.append(("click", x, y, button))

    async def double_click(self, x: int, y: int) -> None:
        self.actions.append(("double_click", x, y))

    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None:
        self.actions.append(("scroll", x, y, scroll_x, scroll_y))

    async def type(self, text: str) -> None:
        self.actions.append(("type", text))

    async def wait(self) -> None:
        self.actions.append(("wait",))

    async def move(self, x: int, y: int) -> None:
        self.actions.append(("move", x, y))

    async def keypress(self, keys: list[str]) -> None:
        self.actions.append(("keypress", *keys))

    async def drag(self, path: list[tuple[int, int]]) -> None:
        self.actions.append(("drag", *path))


# What the model calls each tool with, and the result it reads back on the wire.
CALLS = {
    "shell": ("shell", {"commands": ["ls"]}),
    "apply_patch": ("apply_patch", {"type": "create_file", "path": "a.txt", "diff": "+hi\n"}),
    "computer": ("computer", {"type": "click", "x": 3, "y": 4, "button": "left"}),
}


@pytest.fixture
def wires(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic_upstream: tuple[FakeAnthropic, str],
    tmp_path: Path,
) -> Iterator[Wires]:
    with wires_gateway(fake_upstream, anthropic_upstream, tmp_path) as made:
        yield made


@pytest.fixture
async def client(wires: Wires) -> AsyncIterator[AsyncOpenAI]:
    set_tracing_disabled(True)
    async with AsyncOpenAI(
        base_url=f"{wires.gateway.url}/v1",
        api_key="k",
        max_retries=0,
        _strict_response_validation=True,
    ) as opened:
        yield opened


def script(wires: Wires, wire: str, tool: str) -> str:
    name, arguments = CALLS[tool]
    if wire == "anthropic":
        wires.claude.script(
            AnthropicReply(tool_uses=[("toolu_7", name, arguments)]),
            AnthropicReply(text="Done."),
        )
        return "toolu_7"
    wires.chat.script(
        Reply(tool_calls=[("call_7", name, json.dumps(arguments))], finish_reason="tool_calls"),
        Reply(text="Done."),
    )
    return "call_7"


def second_result(wires: Wires, wire: str, call_id: str) -> Any:
    """The tool result the model read on its second call."""
    if wire == "anthropic":
        assert len(wires.claude.requests) == 2
        block = wires.claude.last["messages"][-1]["content"][0]
        assert (block["type"], block["tool_use_id"]) == ("tool_result", call_id)
        return block["content"]
    assert len(wires.chat.requests) == 2
    messages = wires.chat.last["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["tool_call_id"] == call_id
    if messages[-1]["role"] == "user":  # a screenshot follows the tool messages
        return [tool["content"], messages[-1]["content"]]
    return tool["content"]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("chained", [False, True], ids=["stateless", "previous_response_id"])
@pytest.mark.parametrize("wire", ["chat_completions", "anthropic"])
@pytest.mark.parametrize("tool", list(CALLS))
async def test_the_sdk_runs_the_client_tool_and_the_model_reads_its_result(
    wires: Wires, client: AsyncOpenAI, tool: str, wire: str, chained: bool, streamed: bool
) -> None:
    shell, editor, screen = Shell(), Editor(), Screen()
    tools: dict[str, Any] = {
        "shell": ShellTool(executor=shell),
        "apply_patch": ApplyPatchTool(editor=editor),
        "computer": ComputerTool(computer=screen),
    }
    model = OpenAIResponsesModel(model=MODELS[wire], openai_client=client)
    agent = Agent(name="coder", instructions="Be brief.", model=model, tools=[tools[tool]])
    call_id = script(wires, wire, tool)
    if streamed:
        running = Runner.run_streamed(agent, "Go.", auto_previous_response_id=chained)
        async for _ in running.stream_events():
            pass
        final = running.final_output
    else:
        result = await Runner.run(agent, "Go.", auto_previous_response_id=chained)
        final = result.final_output
    assert final == "Done."
    read = second_result(wires, wire, call_id)
    if tool == "shell":
        assert shell.commands == [["ls"]]
        [entry] = json.loads(read)
        assert entry["stdout"] == "a.txt\n" and entry["outcome"]["type"] == "exit"
    elif tool == "apply_patch":
        assert editor.files == {"a.txt": "+hi\n"}
        assert json.loads(read) == {"status": "completed", "output": "Created a.txt"}
    else:
        assert screen.actions == [("click", 3, 4, "left")]
        if wire == "anthropic":
            assert read == [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                }
            ]
        else:
            image = {"type": "image_url", "image_url": {"url": SCREENSHOT, "detail": "auto"}}
            assert read[1] == [image]
