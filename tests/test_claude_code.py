"""Claude Code itself (the CLI bundled in the ``claude-agent-sdk`` wheel) and the Claude Agent
SDK's ``query()`` through the gateway's ``/v1/messages``, answered by a Chat Completions
model and by a Responses model, each calling a tool Claude Code offers (``Read``) and then
answering from its result; and a session resumed (``--resume``) that calls a tool again
with the earlier turns sent back to the model on its own wire."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import create_app

from .conftest import gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve

KEY = "sk-claude-code-0123456789"
CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not CLAUDE.exists(), reason="the claude-agent-sdk wheel bundles no CLI"),
]
UPSTREAM_MODEL = {"chat-model": "upstream-chat", "resp-model": "upstream-resp"}
A_CLAUDE_NAME = "claude-sonnet-4-5"  # a gateway model named as Claude is, on another wire


class Recorded:
    """The gateway, keeping every ``/v1/messages`` body Claude Code sent it."""

    def __init__(self, app: ASGIApp, bodies: list[dict[str, Any]]) -> None:
        self._app = app
        self._bodies = bodies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/messages":
            await self._app(scope, receive, send)
            return
        parts: list[bytes] = []

        async def reading() -> Message:
            message = await receive()
            parts.append(message.get("body", b""))
            if not message.get("more_body"):
                self._bodies.append(json.loads(b"".join(parts)))
            return message

        await self._app(scope, reading, send)


@dataclass
class ClaudeCode:
    """Claude Code's environment for a gateway whose main model is ``model``."""

    env: dict[str, str]
    work: Path
    fake: FakeUpstream
    model: str
    sent: list[dict[str, Any]] = field(default_factory=list)  # what the gateway received

    def run(self, *arguments: str) -> dict[str, Any]:
        """``claude -p`` with ``arguments``; its JSON result."""
        command = [str(CLAUDE), "-p", *arguments, "--model", self.model]
        command += ["--allowedTools", "Read", "--output-format", "json"]
        done = subprocess.run(
            command, env=self.env, cwd=self.work, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        assert result["is_error"] is False, result
        return result

    def script_read(self, call_id: str, name: str, answer: str) -> None:
        """The model reads ``name`` in the work folder, then says ``answer``."""
        arguments = json.dumps({"file_path": str(self.work / name)})
        self.fake.script(
            Reply(tool_calls=[(call_id, "Read", arguments)], finish_reason="tool_calls"),
            Reply(text=answer),
        )


@pytest.fixture(params=["chat-model", "resp-model"])
def claude_code(
    request: pytest.FixtureRequest, fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> Iterator[ClaudeCode]:
    fake, url = fake_upstream
    model = str(request.param)
    auth = {"mode": "keys", "keys": [{"key": KEY, "project": "coders"}]}
    models = {
        "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
        "resp-model": {"provider": "fake-responses", "upstream_model": "upstream-resp"},
        A_CLAUDE_NAME: {"provider": "fake-chat", "upstream_model": "upstream-chat"},
        "small-model": {"provider": "echo"},  # its side requests (a session's title)
    }
    config = gateway_config(url, tmp_path / "s.db", auth=auth, default_provider=None, models=models)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the secret word is pelican\n")
    (work / "more.txt").write_text("the second word is walrus\n")
    (tmp_path / "home").mkdir()
    sent: list[dict[str, Any]] = []
    with serve(Recorded(create_app(config), sent)) as gateway_url:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": gateway_url,
            "ANTHROPIC_API_KEY": KEY,
            "DISABLE_AUTOUPDATER": "1",
            # Its small model (titles, summaries) is one of the gateway's too.
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": "small-model",
            "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        }
        yield ClaudeCode(env, work, fake, model, sent)


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """The tool results a request carried, by call id, on either wire."""
    if "messages" in body:  # Chat Completions
        return {
            m["tool_call_id"]: str(m["content"]) for m in body["messages"] if m["role"] == "tool"
        }
    found = {}
    for item in body["input"]:
        if item.get("type") == "function_call_output":
            output = item["output"]
            text = output if isinstance(output, str) else json.dumps(output)
            found[item["call_id"]] = text
    return found


def tool_calls(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The earlier tool calls a request sent back to the model: (call id, name)."""
    if "messages" in body:
        return [
            (call["id"], call["function"]["name"])
            for m in body["messages"]
            for call in m.get("tool_calls") or []
        ]
    return [(i["call_id"], i["name"]) for i in body["input"] if i.get("type") == "function_call"]


def user_words(body: dict[str, Any]) -> str:
    """Everything the user said in a request, on either wire, as one string."""
    key = "messages" if "messages" in body else "input"
    return json.dumps([m.get("content") for m in body[key] if m.get("role") == "user"])


def test_claude_code_reads_a_file(claude_code: ClaudeCode) -> None:
    claude_code.script_read("call_read", "notes.txt", "The word is pelican.")
    result = claude_code.run("What is the secret word in notes.txt?")
    assert result["result"] == "The word is pelican.", result
    fake = claude_code.fake
    [answered] = [body for body in fake.requests if tool_results(body)]
    assert "pelican" in tool_results(answered)["call_read"]
    assert {body["model"] for body in fake.requests} == {UPSTREAM_MODEL[claude_code.model]}
    if claude_code.model == "resp-model":  # stateless: the gateway sends the whole context
        assert {body["store"] for body in fake.requests} == {False}
        assert "previous_response_id" not in answered


@pytest.mark.parametrize("claude_code", [A_CLAUDE_NAME], indirect=True)
def test_a_claude_name_on_another_wire_takes_claude_codes_context_edits(
    claude_code: ClaudeCode,
) -> None:
    """For a model it knows by name, Claude Code asks for context edits, which only Claude
    runs; the one it always sends (every thinking block kept) asks for nothing, so a Chat
    Completions model answers."""
    claude_code.script_read("call_read", "notes.txt", "The word is pelican.")
    result = claude_code.run("What is the secret word in notes.txt?")
    assert result["result"] == "The word is pelican.", result
    edits = [
        body["context_management"] for body in claude_code.sent if body["model"] == A_CLAUDE_NAME
    ]
    assert edits and all(
        edit == {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]} for edit in edits
    ), edits
    assert {body["model"] for body in claude_code.fake.requests} == {"upstream-chat"}
    assert all("context_management" not in body for body in claude_code.fake.requests)


def test_a_resumed_session_calls_a_tool_with_its_history(claude_code: ClaudeCode) -> None:
    claude_code.script_read("call_first", "notes.txt", "The word is pelican.")
    first = claude_code.run("What is the secret word in notes.txt?")
    assert first["result"] == "The word is pelican."
    before = len(claude_code.fake.requests)

    claude_code.script_read("call_second", "more.txt", "The second word is walrus.")
    second = claude_code.run("And the word in more.txt?", "--resume", first["session_id"])
    assert second["result"] == "The second word is walrus.", second
    assert second["session_id"] == first["session_id"]
    resumed = claude_code.fake.requests[before:]
    [answered] = [body for body in resumed if "call_second" in tool_results(body)]
    assert "walrus" in tool_results(answered)["call_second"]
    # The first run's turns reached the model again: its question, call and result.
    assert "pelican" in tool_results(answered)["call_first"]
    assert [name for _, name in tool_calls(answered)] == ["Read", "Read"]
    words = user_words(answered)
    assert "secret word in notes.txt" in words and "more.txt?" in words


@pytest.mark.anyio
async def test_the_agent_sdks_query_reads_a_file(claude_code: ClaudeCode) -> None:
    claude_code.script_read("call_read", "notes.txt", "The word is pelican.")
    options = claude_agent_sdk.ClaudeAgentOptions(
        model=claude_code.model,
        allowed_tools=["Read"],
        cwd=str(claude_code.work),
        env=claude_code.env,
        cli_path=str(CLAUDE),
    )
    results = [
        message
        async for message in claude_agent_sdk.query(
            prompt="What is the secret word in notes.txt?", options=options
        )
        if isinstance(message, claude_agent_sdk.ResultMessage)
    ]
    assert [message.result for message in results] == ["The word is pelican."]
    [answered] = [body for body in claude_code.fake.requests if tool_results(body)]
    assert "pelican" in tool_results(answered)["call_read"]
