"""Exchanges on ``/v1/messages`` and ``/v1/chat/completions`` are stored as turns the
console opens (request, answer, usage, cost, route and the edge they came by), unless the
key's project is unstored; a project's key never reaches another project's records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway import create_app, parse_config

from .fake_anthropic import ANTHROPIC_KEY, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

KEY_A = "sk-records-a-0123456789abcdef"
KEY_B = "sk-records-b-0123456789abcdef"
KEY_QUIET = "sk-records-q-0123456789abcdef"
ADMIN = "sk-admin-records-0123456789ab"
PRICING = {"input": 1.0, "output": 2.0}


@pytest.fixture
def gateway(
    anthropic_upstream: tuple[FakeAnthropic, str],
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
) -> Iterator[tuple[str, FakeUpstream]]:
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
                "unstored_projects": ["quiet"],
                "keys": [
                    {"key": KEY_A, "project": "team-a", "name": "a"},
                    {"key": KEY_B, "project": "team-b", "name": "b"},
                    {"key": KEY_QUIET, "project": "quiet", "name": "q"},
                ],
            },
            "providers": {
                "claude": {
                    "wire_api": "anthropic",
                    "base_url": claude_url,
                    "api_key": ANTHROPIC_KEY,
                },
                "chat": {
                    "wire_api": "chat_completions",
                    "base_url": f"{chat_url}/v1",
                    "api_key": UPSTREAM_KEY,
                },
            },
            "models": {
                "claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"},
                "chat-model": {
                    "provider": "chat",
                    "upstream_model": "upstream-chat",
                    "pricing": PRICING,
                },
            },
        },
        env={},
    )
    with serve(create_app(config)) as url:
        yield url, chat


def _console(url: str, path: str, key: str = ADMIN, **params: Any) -> httpx.Response:
    return httpx.get(
        f"{url}/v1/gateway/console{path}",
        headers={"authorization": f"Bearer {key}"},
        params=params,
        timeout=30,
    )


def _by_request(url: str, request_id: str) -> dict[str, Any]:
    found = _console(url, "/search", q=request_id)
    assert found.status_code == 200, found.text
    assert found.json()["kind"] == "response"
    opened = _console(url, f"/responses/{found.json()['id']}")
    assert opened.status_code == 200, opened.text
    turn: dict[str, Any] = opened.json()
    return turn


def _ask_messages(url: str, key: str, *, stream: bool) -> str:
    """A Messages exchange; its request id."""
    client = anthropic.Anthropic(
        base_url=url, api_key=key, max_retries=0, _strict_response_validation=True
    )
    with client:
        request = {
            "model": "chat-model",
            "max_tokens": 64,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Say hello to the console"}],
        }
        if stream:
            with client.messages.with_streaming_response.create(**request, stream=True) as raw:
                list(raw.iter_lines())
                return str(raw.headers["x-request-id"])
        made = client.messages.with_raw_response.create(**request)
        made.parse()
        return str(made.headers["x-request-id"])


def _ask_chat(url: str, key: str, *, stream: bool) -> str:
    client = openai.OpenAI(
        base_url=f"{url}/v1", api_key=key, max_retries=0, _strict_response_validation=True
    )
    with client:
        request: dict[str, Any] = {
            "model": "chat-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Say hello to the console"},
            ],
        }
        if stream:
            with client.chat.completions.with_streaming_response.create(
                **request, stream=True
            ) as raw:
                list(raw.iter_lines())
                return str(raw.headers["x-request-id"])
        made = client.chat.completions.with_raw_response.create(**request)
        made.parse()
        return str(made.headers["x-request-id"])


ASK = {"messages": _ask_messages, "chat_completions": _ask_chat}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("edge", sorted(ASK))
def test_an_exchange_is_a_turn_the_console_opens(
    gateway: tuple[str, FakeUpstream], edge: str, stream: bool
) -> None:
    url, chat = gateway
    chat.script(Reply(text="Hello, console."))
    request_id = ASK[edge](url, KEY_A, stream=stream)
    turn = _by_request(url, request_id)
    assert (turn["edge"], turn["project"], turn["model"]) == (edge, "team-a", "chat-model")
    assert turn["status"] == "completed" and turn["key_id"] == "static:a"
    # Messages' system is the turn's instructions; Chat's system message one of its items
    said_first = turn["instructions"] or turn["input"][0]["content"][0]["text"]
    assert said_first == "Be brief."
    [said] = [item for item in turn["input"] if item.get("role") == "user"]
    assert said["content"][0]["text"] == "Say hello to the console"
    [answer] = turn["output"]
    assert answer["content"][0]["text"] == "Hello, console."
    assert turn["usage"]["input_tokens"] > 0 and turn["usage"]["output_tokens"] > 0
    assert turn["cost_usd"] > 0
    assert turn["route"]["answered_by"] == "chat/upstream-chat"
    assert turn["preview"] == "Say hello to the console"
    listed = _console(url, "/responses", project="team-a").json()["data"]
    assert [row["edge"] for row in listed] == [edge]


@pytest.mark.parametrize("edge", sorted(ASK))
def test_an_unstored_project_keeps_its_usage_and_no_record(
    gateway: tuple[str, FakeUpstream], edge: str
) -> None:
    url, chat = gateway
    chat.script(Reply(text="Not kept."))
    request_id = ASK[edge](url, KEY_QUIET, stream=False)
    assert _console(url, "/search", q=request_id).status_code == 404
    assert _console(url, "/responses", project="quiet").json()["data"] == []
    usage = _console(url, "/usage", by="project").json()
    assert {g["group"]: g["requests"] for g in usage["groups"]} == {"quiet": 1}


def test_chats_own_store_false_keeps_no_record(gateway: tuple[str, FakeUpstream]) -> None:
    url, chat = gateway
    chat.script(Reply(text="Not kept."))
    answer = httpx.post(
        f"{url}/v1/chat/completions",
        headers={"authorization": f"Bearer {KEY_A}"},
        json={
            "model": "chat-model",
            "store": False,
            "messages": [{"role": "user", "content": "x"}],
        },
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert _console(url, "/search", q=answer.headers["x-request-id"]).status_code == 404


@pytest.mark.parametrize("edge", sorted(ASK))
def test_another_projects_key_cannot_reach_the_record(
    gateway: tuple[str, FakeUpstream], edge: str
) -> None:
    url, chat = gateway
    chat.script(Reply(text="Team A's answer."))
    request_id = ASK[edge](url, KEY_A, stream=False)
    record = _by_request(url, request_id)["id"]
    assert _console(url, f"/responses/{record}", KEY_A).status_code == 200
    assert _console(url, f"/responses/{record}", KEY_B).status_code == 404
    assert _console(url, "/search", KEY_B, q=request_id).status_code == 404
    assert _console(url, "/responses", KEY_B).json()["data"] == []
    headers = {"authorization": f"Bearer {KEY_B}"}
    elsewhere = httpx.get(f"{url}/v1/responses/{record}", headers=headers, timeout=30)
    assert elsewhere.status_code == 404
    chained = httpx.post(
        f"{url}/v1/responses",
        headers=headers,
        json={"model": "chat-model", "input": "more", "previous_response_id": record},
        timeout=30,
    )
    assert chained.status_code == 400
    assert chained.json()["error"]["code"] == "previous_response_not_found"


def test_a_thinking_block_sealed_for_one_project_does_not_open_for_another(
    gateway: tuple[str, FakeUpstream],
) -> None:
    url, chat = gateway
    chat.script(Reply(text="Thought it through.", reasoning="step one"))
    client_a = anthropic.Anthropic(base_url=url, api_key=KEY_A, max_retries=0)
    client_b = anthropic.Anthropic(base_url=url, api_key=KEY_B, max_retries=0)
    with client_a, client_b:
        question: anthropic.types.MessageParam = {"role": "user", "content": "Think"}
        first = client_a.messages.create(model="chat-model", max_tokens=64, messages=[question])
        assert first.content[0].type == "thinking"
        follow_up: list[anthropic.types.MessageParam] = [
            question,
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": "Again"},
        ]
        with pytest.raises(anthropic.BadRequestError) as refused:
            client_b.messages.create(model="chat-model", max_tokens=64, messages=follow_up)
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "signature" in refused.value.message
