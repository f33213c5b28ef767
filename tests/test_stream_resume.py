"""Background streams: kept event by event, resumed with ``starting_after`` on any instance."""

from __future__ import annotations

import json
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

SLOW = Reply(text="a b c d e f g h i j k l", delay=0.05)
BODY = {"model": "chat-model", "input": "go", "background": True, "stream": True}
# A kept stream is the gateway's own: alike whichever wire the provider speaks.
WIRES = pytest.mark.parametrize("model", ["chat-model", "resp-model"])


def events_of(lines: Any) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def start_and_drop(
    url: str, keep: int, model: str = "chat-model"
) -> tuple[str, list[dict[str, Any]]]:
    """Start a background stream, read ``keep`` events, then hang up."""
    seen: list[dict[str, Any]] = []
    body = {**BODY, "model": model}
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[6:]))
                if len(seen) == keep:
                    break
    return seen[0]["response"]["id"], seen


def resume(url: str, response_id: str, after: int) -> list[dict[str, Any]]:
    params = {"stream": "true", "starting_after": str(after)}
    with httpx.stream(
        "GET", f"{url}/v1/responses/{response_id}", params=params, timeout=30
    ) as response:
        assert response.status_code == 200
        return events_of(response.iter_lines())


@WIRES
def test_every_later_event_arrives_exactly_once(gateway: Gateway, model: str) -> None:
    gateway.fake.script(SLOW)
    response_id, seen = start_and_drop(gateway.url, keep=4, model=model)
    rest = resume(gateway.url, response_id, seen[-1]["sequence_number"])
    numbers = [e["sequence_number"] for e in seen + rest]
    assert numbers == list(range(len(numbers)))
    assert rest[-1]["type"] == "response.completed"
    assert rest[-1]["response"]["output"][0]["content"][0]["text"] == SLOW.text
    everything = resume(gateway.url, response_id, -1)  # and again, from the start
    assert [e["sequence_number"] for e in everything] == numbers
    middle = len(numbers) // 2
    assert resume(gateway.url, response_id, middle) == everything[middle + 1 :]
    assert resume(gateway.url, response_id, numbers[-1]) == []  # nothing after the end


@WIRES
def test_the_strict_sdk_resumes_a_stream(gateway: Gateway, model: str) -> None:
    gateway.fake.script(SLOW)
    response_id, _ = start_and_drop(gateway.url, keep=3, model=model)
    client = gateway.client()
    rest = list(client.responses.retrieve(response_id, stream=True, starting_after=2))
    assert rest[0].sequence_number == 3 and rest[-1].type == "response.completed"


@WIRES
def test_a_background_stream_is_cancelled(gateway: Gateway, model: str) -> None:
    # The upstream holds its stream after three chunks until the cancel has landed.
    held = threading.Event()
    gateway.fake.script(Reply(text="word " * 60, gate=held, hold_after=3))
    try:
        response_id, _ = start_and_drop(gateway.url, keep=3, model=model)
        client = gateway.client()
        assert client.responses.cancel(response_id).status == "cancelled"
    finally:
        held.set()
    ending = resume(gateway.url, response_id, -1)[-1]
    assert ending["type"] == "response.failed" and ending["response"]["status"] == "cancelled"
    assert client.responses.retrieve(response_id).status == "cancelled"


def test_only_background_streams_can_be_resumed(gateway: Gateway) -> None:
    client = gateway.client()
    plain = client.responses.create(model="echo", input="x")
    with pytest.raises(openai.BadRequestError):
        client.responses.retrieve(plain.id, stream=True)
    bad = httpx.get(f"{gateway.url}/v1/responses/{plain.id}", params={"stream": "maybe"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "stream"


def test_a_stream_started_on_one_instance_resumes_on_another(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, postgres_dsn: str
) -> None:
    fake = fake_upstream[0]
    session = {"backend": "postgres", "postgres": {"dsn": postgres_dsn}}
    config = gateway_config(fake_upstream[1], tmp_path / "unused.db", session=session)
    fake.script(SLOW)
    with ExitStack() as running:
        first, second = (running.enter_context(serve(create_app(config))) for _ in range(2))
        response_id, seen = start_and_drop(first, keep=5)
        rest = resume(second, response_id, seen[-1]["sequence_number"])
        again = resume(second, response_id, 1)
    numbers = [e["sequence_number"] for e in seen + rest]
    assert numbers == list(range(len(numbers))) and rest[-1]["type"] == "response.completed"
    assert [e["sequence_number"] for e in again] == numbers[2:]
