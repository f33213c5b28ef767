"""A streamed ``POST /v1/messages`` that fails part-way: the block that was open is closed
(``content_block_stop``) before the ``error`` event, so a client's accumulator sees every
block it was sent end."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from gateway import create_app, parse_config

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

QUESTION: list[Any] = [{"role": "user", "content": "count"}]


@pytest.fixture
def gateway_url(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[str]:
    """A gateway whose one model may stream for one second at most."""
    _, url = fake_upstream
    config = parse_config(
        {
            "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
            "providers": {
                "chat": {
                    "wire_api": "chat_completions",
                    "base_url": f"{url}/v1",
                    "api_key": UPSTREAM_KEY,
                    "max_stream_seconds": 1.0,
                },
            },
            "models": {"chat-model": {"provider": "chat", "upstream_model": "upstream-chat"}},
        },
        env={},
    )
    with serve(create_app(config)) as gateway:
        yield gateway


@pytest.fixture
def held(fake_upstream: tuple[FakeUpstream, str]) -> Iterator[threading.Event]:
    """A gate the fake's streams wait at (opened at the end, to let them finish)."""
    gate = threading.Event()
    yield gate
    gate.set()


def _sse_events(url: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a streamed ``POST /v1/messages``, read raw."""
    events: list[tuple[str, dict[str, Any]]] = []
    kind = ""
    headers = {"anthropic-version": "2023-06-01"}
    with httpx.stream(
        "POST", f"{url}/v1/messages", json=body, headers=headers, timeout=30
    ) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((kind, json.loads(line.removeprefix("data: "))))
    return events


def test_a_stream_failing_mid_block_closes_the_block_before_its_error(
    fake_upstream: tuple[FakeUpstream, str], gateway_url: str, held: threading.Event
) -> None:
    fake, _ = fake_upstream
    # The role chunk and one piece of text, then the upstream waits past the time limit.
    fake.script(Reply(text="one two three", gate=held, hold_after=2))
    body = {"model": "chat-model", "max_tokens": 64, "stream": True, "messages": QUESTION}
    events = _sse_events(gateway_url, body)
    kinds = [kind for kind, _ in events]
    assert "content_block_delta" in kinds
    assert kinds[-2:] == ["content_block_stop", "error"] and "message_stop" not in kinds
    starts = [data["index"] for kind, data in events if kind == "content_block_start"]
    stops = [data["index"] for kind, data in events if kind == "content_block_stop"]
    assert starts == stops == [0]
    error = events[-1][1]
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert "limit" in error["error"]["message"]


def test_the_sdk_reads_the_closed_block_then_raises_the_error(
    fake_upstream: tuple[FakeUpstream, str], gateway_url: str, held: threading.Event
) -> None:
    fake, _ = fake_upstream
    fake.script(Reply(text="one two three", gate=held, hold_after=2))
    client = anthropic.Anthropic(
        base_url=gateway_url, api_key="unused", max_retries=0, _strict_response_validation=True
    )
    seen: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as failed,
        client.messages.stream(model="chat-model", max_tokens=64, messages=QUESTION) as stream,
    ):
        seen.extend(event.type for event in stream)
    client.close()
    assert "limit" in str(failed.value)
    assert seen[-1] == "content_block_stop"
    [block] = stream.current_message_snapshot.content
    assert block.type == "text" and block.text
