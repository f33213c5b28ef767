"""A Claude model on the Anthropic wire gets a ``/v1/messages`` request exactly as its client
sent it (the strict fake checks it with the SDK's types) and its answer back as it came,
still routed, retried, metered, priced and stored; a fallback on another wire gets the
translation."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from gateway import create_app, parse_config

from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

KEY = "sk-passthrough-0123456789abcdef"
ADMIN = "sk-admin-passthrough-0123456789"
PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452")).decode()
PDF = base64.b64encode(b"%PDF-1.4 a tiny document").decode()
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    "cache_control": {"type": "ephemeral"},
}


@pytest.fixture
def gateway(
    anthropic_upstream: tuple[FakeAnthropic, str],
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
) -> Iterator[tuple[str, FakeAnthropic, FakeUpstream]]:
    claude, claude_url = anthropic_upstream
    claude.reset()
    chat, chat_url = fake_upstream
    config = parse_config(
        {
            "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
            "auth": {
                "mode": "keys",
                "cache_seconds": 0,
                "admin_key": ADMIN,
                "keys": [{"key": KEY, "project": "team", "name": "t"}],
            },
            "providers": {
                "claude": {
                    "wire_api": "anthropic",
                    "base_url": claude_url,
                    "api_key": ANTHROPIC_KEY,
                    "anthropic_beta": "prompt-caching-2024-07-31",
                },
                "chat": {
                    "wire_api": "chat_completions",
                    "base_url": f"{chat_url}/v1",
                    "api_key": UPSTREAM_KEY,
                },
            },
            "models": {
                "claude": {
                    "provider": "claude",
                    "upstream_model": "claude-sonnet-5-5",
                    "retry": {"attempts": 2, "max_wait_seconds": 1},
                    "pricing": {"input": 3.0, "output": 15.0},
                },
                "claude-or-chat": {
                    "provider": "claude",
                    "upstream_model": "claude-sonnet-5-5",
                    "fallbacks": ["chat-model"],
                },
                "chat-model": {"provider": "chat", "upstream_model": "upstream-chat"},
            },
        },
        env={},
    )
    with serve(create_app(config)) as url:
        yield url, claude, chat


def _post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    sent = {"x-api-key": KEY, "anthropic-version": "2023-06-01", **headers}
    return httpx.post(f"{url}/v1/messages", json=body, headers=sent, timeout=30)


def _everything(claude: FakeAnthropic) -> dict[str, Any]:
    """A request with every field a Claude client sends: cache breakpoints, thinking
    replayed with its signature, tools, an image, a document, metadata and the rest."""
    thought = "The user wants weather."
    return {
        "model": "claude",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                        "title": "notes.pdf",
                    },
                    {"type": "text", "text": "Weather in Paris?"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": thought, "signature": claude.sign(thought)},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "sunny",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ],
        "tools": [WEATHER],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "metadata": {"user_id": "user-42"},
        "stop_sequences": ["STOP"],
        "service_tier": "auto",
        "cache_control": {"type": "ephemeral"},
    }


def test_the_request_goes_as_sent_and_the_answer_comes_back_as_it_came(
    gateway: tuple[str, FakeAnthropic, FakeUpstream],
) -> None:
    url, claude, _ = gateway
    claude.script(AnthropicReply(text="Sunny in Paris.", thinking="Easy."))
    body = _everything(claude)
    answer = _post(url, body, **{"anthropic-beta": "interleaved-thinking-2025-05-14"})
    assert answer.status_code == 200, answer.text
    assert claude.last == {**body, "model": "claude-sonnet-5-5"}  # nothing added, nothing lost
    beta = claude.headers[-1]["anthropic-beta"]
    assert beta == "prompt-caching-2024-07-31,interleaved-thinking-2025-05-14"
    message = answer.json()
    assert message["id"].startswith("msg_fake")  # Claude's own id, unchanged
    assert message["model"] == "claude"  # the name the client asked for
    assert [b["type"] for b in message["content"]] == ["thinking", "text"]
    assert message["content"][0]["signature"] == claude.sign("Easy.")
    assert set(message["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    anthropic.types.Message.model_validate(message, strict=True)
    assert answer.headers["x-request-id"]
    assert answer.headers["x-gateway-upstream"] == "claude/claude-sonnet-5-5"
    found = httpx.get(
        f"{url}/v1/gateway/console/search",
        params={"q": answer.headers["x-request-id"]},
        headers={"authorization": f"Bearer {ADMIN}"},
    ).json()
    turn = httpx.get(
        f"{url}/v1/gateway/console/responses/{found['id']}",
        headers={"authorization": f"Bearer {ADMIN}"},
    ).json()
    assert (turn["edge"], turn["status"]) == ("messages", "completed")
    assert turn["usage"]["output_tokens"] == message["usage"]["output_tokens"]
    assert turn["cost_usd"] > 0 and turn["route"]["answered_by"] == "claude/claude-sonnet-5-5"


def test_a_stream_is_claudes_own_events(gateway: tuple[str, FakeAnthropic, FakeUpstream]) -> None:
    url, claude, _ = gateway
    claude.script(AnthropicReply(text="Hi there.", thinking="Say hi."))
    body = {
        "model": "claude",
        "max_tokens": 4096,
        "stream": True,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "Hi"}],
    }
    answer = _post(url, body)
    assert answer.status_code == 200, answer.text
    assert claude.last == {**body, "model": "claude-sonnet-5-5"}
    events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    assert [e["type"] for e in events] == [
        "message_start",
        "ping",
        "content_block_start",
        *["content_block_delta"] * 4,  # three thinking pieces, then the signature
        "content_block_stop",
        "content_block_start",
        *["content_block_delta"] * 3,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["id"].startswith("msg_fake")
    assert events[0]["message"]["model"] == "claude"
    assert events[6]["delta"] == {"type": "signature_delta", "signature": claude.sign("Say hi.")}
    assert set(events[-2]["usage"]) >= {"cache_read_input_tokens", "cache_creation_input_tokens"}


def test_an_overloaded_claude_is_tried_again(
    gateway: tuple[str, FakeAnthropic, FakeUpstream],
) -> None:
    url, claude, _ = gateway
    claude.script(AnthropicReply(status=529), AnthropicReply(text="Second time lucky."))
    answer = _post(
        url, {"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"][0]["text"] == "Second time lucky."
    assert len(claude.requests) == 2 and claude.requests[0] == claude.requests[1]


def test_an_error_mid_stream_keeps_its_type(
    gateway: tuple[str, FakeAnthropic, FakeUpstream],
) -> None:
    url, claude, _ = gateway
    claude.script(AnthropicReply(text="A long answer that breaks.", stream_error_after=4))
    client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    with (
        client,
        pytest.raises(anthropic.APIStatusError) as raised,
        client.messages.stream(
            model="claude", max_tokens=64, messages=[{"role": "user", "content": "x"}]
        ) as stream,
    ):
        list(stream)
    assert raised.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def test_a_fallback_on_another_wire_gets_the_translation(
    gateway: tuple[str, FakeAnthropic, FakeUpstream],
) -> None:
    url, claude, chat = gateway
    claude.script(*[AnthropicReply(status=500)] * 3)
    chat.script(Reply(text="From the chat model."))
    answer = _post(
        url,
        {
            "model": "claude-or-chat",
            "max_tokens": 64,
            "system": [
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [{"role": "user", "content": "x"}],
        },
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"][0]["text"] == "From the chat model."
    assert answer.json()["model"] == "claude-or-chat"
    assert "anthropic_passthrough" not in chat.last
    assert chat.last["messages"][0] == {"role": "system", "content": "Be brief."}


def test_another_models_thinking_is_left_out_for_claude(
    gateway: tuple[str, FakeAnthropic, FakeUpstream],
) -> None:
    url, claude, chat = gateway
    chat.script(Reply(text="Four.", reasoning="two and two"))
    question = {"role": "user", "content": "Two and two?"}
    first = _post(url, {"model": "chat-model", "max_tokens": 64, "messages": [question]}).json()
    assert first["content"][0]["signature"].startswith("gwt1.")
    follow = [question, {"role": "assistant", "content": first["content"]}]
    follow.append({"role": "user", "content": "And three?"})
    answer = _post(url, {"model": "claude", "max_tokens": 64, "messages": follow})
    assert answer.status_code == 200, answer.text
    assert claude.last["messages"][1]["content"] == [{"type": "text", "text": "Four."}]


def test_count_tokens_takes_the_body_as_sent(
    gateway: tuple[str, FakeAnthropic, FakeUpstream],
) -> None:
    url, claude, _ = gateway
    body = {
        "model": "claude",
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Count me"}],
        "tools": [WEATHER],
    }
    counted = httpx.post(
        f"{url}/v1/messages/count_tokens",
        json=body,
        headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"},
        timeout=30,
    )
    assert counted.status_code == 200, counted.text
    assert claude.last == {**body, "model": "claude-sonnet-5-5"}
    assert counted.json() == {"input_tokens": claude.input_tokens(claude.last)}
