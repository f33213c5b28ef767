"""Codex CLI 0.169 through the gateway to Claude (``wire_api: anthropic``), against the
strict fake of the Messages API: a shell command with signed thinking, then resume; and
a freeform ``apply_patch``.

Codex reads the gateway's catalog (``GET /v1/models?client_version=…``) only for a
provider it can authenticate: here a command prints the bearer token it sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .servers import serve, start_instance
from .test_codex_cli import codex, run_codex  # noqa: F401

pytestmark = [pytest.mark.system]

# Codex 0.169 runs commands without asking and outside its sandbox with this flag (without
# it, ``exec`` runs read-only: ``cat`` works, ``apply_patch`` is refused).
UNATTENDED = "--dangerously-bypass-approvals-and-sandbox"
THOUGHT = "I should run it."


@pytest.fixture
def claude_codex(tmp_path: Path) -> Iterator[tuple[Path, FakeAnthropic]]:
    """Codex's home, configured for ``claude-model`` on a gateway whose provider is the
    fake Anthropic; the fake."""
    fake = FakeAnthropic()
    with serve(fake.app) as upstream_url:
        config = tmp_path / "gateway.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
                    "providers": {
                        "claude": {
                            "wire_api": "anthropic",
                            "base_url": upstream_url,
                            "api_key": ANTHROPIC_KEY,
                        }
                    },
                    "models": {
                        "claude-model": {
                            "provider": "claude",
                            "upstream_model": "claude-sonnet-5-5",
                            "codex": {
                                "reasoning_levels": ["low", "medium"],
                                "default_reasoning_level": "low",
                            },
                        }
                    },
                }
            )
        )
        process, url = start_instance(config)
        home = tmp_path / "codex-home"
        home.mkdir()
        (home / "config.toml").write_text(
            'model = "claude-model"\n'
            'model_provider = "gateway"\n'
            'web_search = "disabled"\n'  # no one runs web search for this model
            'model_reasoning_effort = "low"\n'
            "[model_providers.gateway]\n"
            'name = "gateway"\n'
            f'base_url = "{url}/v1"\n'
            'wire_api = "responses"\n'
            "supports_websockets = true\n"
            "[model_providers.gateway.auth]\n"  # without it Codex never reads the catalog
            'command = "printf"\n'
            'args = ["gateway-token"]\n'
        )
        try:
            yield home, fake
        finally:
            process.terminate()
            process.wait(timeout=30)


def failure(result: Any, fake: FakeAnthropic, home: Path) -> str:
    """What to show when Codex failed: its stderr, what the fake received, the log."""
    log = "\n".join(p.read_text() for p in home.parent.glob("gateway-*.log"))
    sent = json.dumps([{k: v for k, v in r.items() if k != "tools"} for r in fake.requests])
    return f"stderr:\n{result.stderr[-3000:]}\nsent:\n{sent[-4000:]}\nlog:\n{log[-3000:]}"


def signed(fake: FakeAnthropic, thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": fake.sign(thinking)}


def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def tool_result(request: dict[str, Any], tool_use_id: str) -> tuple[int, dict[str, Any]]:
    """The index of the user message answering ``tool_use_id``, and its tool_result."""
    for i, message in enumerate(request["messages"]):
        for block in blocks(message):
            if block["type"] == "tool_result" and block["tool_use_id"] == tool_use_id:
                return i, block
    raise AssertionError(f"no tool_result for {tool_use_id}")


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def user_text(message: dict[str, Any]) -> str:
    return " ".join(b["text"] for b in blocks(message) if b["type"] == "text")


def test_codex_runs_a_shell_command_for_claude_then_resumes(
    codex: str,  # noqa: F811
    claude_codex: tuple[Path, FakeAnthropic],
) -> None:
    home, fake = claude_codex
    work = home.parent / "work"
    work.mkdir()
    (work / "hello.txt").write_text("hello from the file\n")
    fake.script(
        AnthropicReply(
            thinking=THOUGHT, tool_uses=[("toolu_1", "exec_command", {"cmd": "cat hello.txt"})]
        ),
        AnthropicReply(text="The file says hello."),
    )
    first = run_codex(codex, home, UNATTENDED, "What does hello.txt say?")
    assert first.returncode == 0, failure(first, fake, home)
    assert "The file says hello." in first.stdout
    log = next(home.parent.glob("gateway-*.log")).read_text()
    assert '"GET /v1/models' in log  # Codex read the catalog
    assert "Model metadata for `claude-model` not found" not in first.stderr
    tools = {tool["name"]: tool for tool in fake.requests[0]["tools"]}
    assert "exec_command" in tools and "apply_patch" in tools
    assert fake.requests[0]["thinking"]["type"] == "enabled"  # Codex asked for reasoning

    assert len(fake.requests) == 2, failure(first, fake, home)
    second = fake.requests[1]
    assert fake.replayed_thinking(second) == [signed(fake, THOUGHT)]
    at, result = tool_result(second, "toolu_1")
    assistant = second["messages"][at - 1]
    assert assistant["role"] == "assistant"
    said = blocks(assistant)
    assert said[0] == signed(fake, THOUGHT)
    uses = [b for b in said if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]["cmd"]) for u in uses] == [
        ("toolu_1", "exec_command", "cat hello.txt")
    ]
    assert blocks(second["messages"][at])[0] == result  # the tool_result comes first
    assert "hello from the file" in result_text(result)

    fake.script(AnthropicReply(text="It said hello from the file."))
    resumed = run_codex(codex, home, UNATTENDED, "resume", "--last", "What did it say?")
    assert resumed.returncode == 0, failure(resumed, fake, home)
    assert "It said hello from the file." in resumed.stdout
    messages = fake.last["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"]
    assert any("What does hello.txt say?" in user_text(m) for m in messages)
    assert "What did it say?" in user_text(messages[-1])
    earlier = [b for m in messages for b in blocks(m)]
    assert any(b["type"] == "tool_use" and b["id"] == "toolu_1" for b in earlier)
    assert "hello from the file" in result_text(tool_result(fake.last, "toolu_1")[1])
    assert signed(fake, THOUGHT) in fake.replayed_thinking()


def test_codex_applies_a_freeform_patch_from_claude(
    codex: str,  # noqa: F811
    claude_codex: tuple[Path, FakeAnthropic],
) -> None:
    home, fake = claude_codex
    patch = "*** Begin Patch\n*** Add File: note.txt\n+hi\n*** End Patch\n"
    fake.script(
        AnthropicReply(
            thinking="A note.", tool_uses=[("toolu_p", "apply_patch", {"input": patch})]
        ),
        AnthropicReply(text="Added note.txt."),
    )
    result = run_codex(codex, home, UNATTENDED, "Add a note saying hi.")
    assert result.returncode == 0, failure(result, fake, home)
    assert "Added note.txt." in result.stdout
    assert (home.parent / "work" / "note.txt").read_text() == "hi\n"
    at, answered = tool_result(fake.last, "toolu_p")
    assert fake.replayed_thinking() == [signed(fake, "A note.")]
    use = next(b for b in blocks(fake.last["messages"][at - 1]) if b["type"] == "tool_use")
    assert (use["name"], use["input"]) == ("apply_patch", {"input": patch})
    assert "note.txt" in result_text(answered)
