"""``truncation``: a context too long for the model, cut (``auto``) or refused (``disabled``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app
from gateway.context.truncation import cut_points

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve

pytestmark = [pytest.mark.api]

LONG = "word " * 80  # about a hundred tokens to the fake


def chain(url: str, turns: int, model: str = "chat-model") -> str:
    previous: str | None = None
    for n in range(turns):
        body: dict[str, Any] = {"model": model, "input": f"turn {n}: {LONG}"}
        if previous:
            body["previous_response_id"] = previous
        answer = httpx.post(f"{url}/v1/responses", json=body)
        assert answer.status_code == 200, answer.text
        previous = answer.json()["id"]
    assert previous is not None
    return previous


def user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"][:7] for m in request["messages"] if m["role"] == "user"]


def test_disabled_refuses_with_context_length_exceeded(gateway: Gateway) -> None:
    last = chain(gateway.url, 4)
    gateway.fake.context_window = 150
    body = {"model": "chat-model", "input": "one more", "previous_response_id": last}
    refused = httpx.post(f"{gateway.url}/v1/responses", json=body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["code"], error["param"]) == ("context_length_exceeded", "input")
    assert "maximum context length is 150" in error["message"]
    with httpx.stream("POST", f"{gateway.url}/v1/responses", json={**body, "stream": True}) as sse:
        events = [json.loads(line[6:]) for line in sse.iter_lines() if line.startswith("data: ")]
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "context_length_exceeded"


@pytest.mark.parametrize("with_code", [True, False])
def test_auto_drops_the_oldest_turns_and_retries_once(gateway: Gateway, with_code: bool) -> None:
    last = chain(gateway.url, 4)
    gateway.fake.requests.clear()
    gateway.fake.context_window = 350
    gateway.fake.context_error_code = with_code  # vLLM says it in words only
    body = {
        "model": "chat-model",
        "input": "one more",
        "previous_response_id": last,
        "truncation": "auto",
        "instructions": "Be brief.",
    }
    answer = httpx.post(f"{gateway.url}/v1/responses", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["truncation"] == "auto"
    first, second = gateway.fake.requests
    assert user_texts(first) == ["turn 0:", "turn 1:", "turn 2:", "turn 3:", "one mor"]
    kept = user_texts(second)
    assert kept[-1] == "one mor" and len(kept) < 5
    assert kept == user_texts(first)[-len(kept) :]  # whole turns dropped from the start
    assert second["messages"][0] == {"role": "system", "content": "Be brief."}
    assert second["messages"][1]["role"] == "user"  # a turn begins with its question


def test_a_known_context_window_is_kept_before_sending(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, url = fake_upstream
    models = {"small": {"provider": "fake-chat", "context_window": 400}}
    config = gateway_config(url, tmp_path / "t.db", models=models)
    with serve(create_app(config)) as gateway_url:
        last = chain(gateway_url, 5, model="small")
        fake.requests.clear()
        fake.context_window = 400  # the upstream would refuse more
        body = {
            "model": "small",
            "input": "the newest",
            "previous_response_id": last,
            "truncation": "auto",
            "max_output_tokens": 50,
        }
        answer = httpx.post(f"{gateway_url}/v1/responses", json=body)
        received = list(fake.requests)
    assert answer.status_code == 200, answer.text
    (sent,) = received  # cut before sending: no refusal, no retry
    kept = user_texts(sent)
    assert kept[-1] == "the new" and 1 < len(kept) < 6


def test_a_tool_call_is_never_separated_from_its_output() -> None:
    history = [
        {"type": "message", "role": "user", "content": "q1"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "message", "role": "user", "content": "while waiting"},
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
        {"type": "message", "role": "assistant", "content": "it is 42"},
        {"type": "message", "role": "user", "content": "q2"},
        {"type": "message", "role": "assistant", "content": "a2"},
    ]
    assert cut_points(history) == [5]  # not 2: the output at 3 would lose its call at 1
