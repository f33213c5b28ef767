"""Claude Code itself (the CLI bundled in the ``claude-agent-sdk`` wheel) and the Claude Agent
SDK's ``query()`` through the gateway's ``/v1/messages``, answered by a Chat Completions
model that calls a tool Claude Code offers (``Read``) and then answers from its result."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest

from gateway import create_app

from .conftest import gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.system]

KEY = "sk-claude-code-0123456789"
CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


@pytest.fixture
def claude_code(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> Iterator[tuple[dict[str, str], Path, FakeUpstream]]:
    """Claude Code's environment for a gateway with ``chat-model``, its folder, the fake."""
    fake, url = fake_upstream
    auth = {"mode": "keys", "keys": [{"key": KEY, "project": "coders"}]}
    models = {
        "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
        "small-model": {"provider": "echo"},  # its side requests (a session's title)
    }
    config = gateway_config(url, tmp_path / "s.db", auth=auth, default_provider=None, models=models)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the secret word is pelican\n")
    (tmp_path / "home").mkdir()
    with serve(create_app(config)) as gateway_url:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": gateway_url,
            "ANTHROPIC_API_KEY": KEY,
            "DISABLE_AUTOUPDATER": "1",
            # Its small model (titles, summaries) is one of the gateway's too.
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": "small-model",
            "ANTHROPIC_DEFAULT_SONNET_MODEL": "chat-model",
            "ANTHROPIC_DEFAULT_OPUS_MODEL": "chat-model",
        }
        yield env, work, fake


def script_read(fake: FakeUpstream, work: Path) -> None:
    arguments = json.dumps({"file_path": str(work / "notes.txt")})
    fake.script(
        Reply(text="", tool_calls=[("call_read", "Read", arguments)], finish_reason="tool_calls"),
        Reply(text="The word is pelican."),
    )


def read_result(fake: FakeUpstream) -> dict[str, Any]:
    """The tool message Claude Code's ``Read`` answered with, as the model got it."""
    [answer] = [r for r in fake.requests if any(m["role"] == "tool" for m in r["messages"])]
    [tool] = [m for m in answer["messages"] if m["role"] == "tool"]
    return dict(tool)


@pytest.mark.skipif(not CLAUDE.exists(), reason="the claude-agent-sdk wheel bundles no CLI")
def test_claude_code_reads_a_file_for_a_chat_model(
    claude_code: tuple[dict[str, str], Path, FakeUpstream],
) -> None:
    env, work, fake = claude_code
    script_read(fake, work)
    command = [str(CLAUDE), "-p", "What is the secret word in notes.txt?"]
    command += ["--model", "chat-model", "--allowedTools", "Read", "--output-format", "json"]
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "The word is pelican.", result
    assert result["is_error"] is False
    tool = read_result(fake)
    assert tool["tool_call_id"] == "call_read" and "pelican" in tool["content"]
    assert {request["model"] for request in fake.requests} == {"upstream-chat"}


@pytest.mark.skipif(not CLAUDE.exists(), reason="the claude-agent-sdk wheel bundles no CLI")
@pytest.mark.anyio
async def test_the_agent_sdks_query_reads_a_file_for_a_chat_model(
    claude_code: tuple[dict[str, str], Path, FakeUpstream],
) -> None:
    env, work, fake = claude_code
    script_read(fake, work)
    options = claude_agent_sdk.ClaudeAgentOptions(
        model="chat-model", allowed_tools=["Read"], cwd=str(work), env=env, cli_path=str(CLAUDE)
    )
    results = [
        message
        async for message in claude_agent_sdk.query(
            prompt="What is the secret word in notes.txt?", options=options
        )
        if isinstance(message, claude_agent_sdk.ResultMessage)
    ]
    assert [message.result for message in results] == ["The word is pelican."]
    assert "pelican" in read_result(fake)["content"]
