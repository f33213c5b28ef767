"""A misbehaving upstream, on both wires, streamed and not: each fault is reported truthfully.

Each case asserts the client's status and body, what was stored, and that the chain can
still continue from the parent the failed turn was built on.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gateway import create_app, parse_config

from .misbehaving_upstream import misbehaving_app
from .servers import raw_server, serve

pytestmark = [pytest.mark.api]

SECRET_HEADER = "X-Org-Secret"
SECRET_VALUE = "org-secret-value-42"

COMMON_FAULTS = [
    "html_502",
    "html_200",
    "empty",
    "rate_limited",
    "unavailable",
    "long_error",
    "huge",
    "drip",
]
CHAT_FAULTS = [
    "malformed",
    "no_choices",
    "bad_tool_calls",
    "content_object",
    "error_text",
    "list_body",
]
RESPONSES_FAULTS = ["malformed", "content_string", "error_text", "list_body", "no_output"]
STREAM_FAULTS = [
    "cut",
    "no_done",
    "empty_stream",
    "malformed",
    "not_json",
    "error_event",
    "idle",
    "endless",
    "drip_after_start",
]

CHAT_STREAM_FAULTS = ["finish_no_done", "bad_tool_calls"]


def _provider(wire: str, url: str) -> dict[str, Any]:
    return {
        "wire_api": wire,
        "base_url": url if wire == "anthropic" else f"{url}/v1",
        "api_key": "sk-misbehaving-0123456789",
        "headers": {SECRET_HEADER: SECRET_VALUE},
        "timeout_seconds": 1.0,
        "stream_idle_timeout_seconds": 0.5,
        "max_stream_seconds": 1.5,
        "max_response_bytes": 64 * 1024,
    }


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    names = {*COMMON_FAULTS, *CHAT_FAULTS, *RESPONSES_FAULTS, *STREAM_FAULTS, *CHAT_STREAM_FAULTS}
    names.add("huge_stream")
    models: dict[str, Any] = {}
    for fault in names:
        models[f"chat-{fault}"] = {"provider": "bad-chat", "upstream_model": fault}
        models[f"resp-{fault}"] = {"provider": "bad-resp", "upstream_model": fault}
        models[f"anth-{fault}"] = {"provider": "bad-anth", "upstream_model": fault}
    with serve(misbehaving_app()) as upstream:
        config = parse_config(
            {
                "session": {"sqlite": {"path": str(tmp_path_factory.mktemp("faults") / "s.db")}},
                "providers": {
                    "bad-chat": _provider("chat_completions", upstream),
                    "bad-resp": _provider("responses", upstream),
                    "bad-anth": _provider("anthropic", upstream),
                    "echo": {"wire_api": "echo"},
                },
                "models": models,
                "default_provider": "echo",
            },
            env={},
        )
        with serve(create_app(config)) as url:
            yield url


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{url}/v1", api_key="k", max_retries=0, _strict_response_validation=True
    )


def _parent(url: str) -> str:
    with _client(url) as client:
        return client.responses.create(model="echo", input="the parent").id


def _assert_parent_continues(url: str, parent: str) -> None:
    with _client(url) as client:
        child = client.responses.create(
            model="echo", input="after the fault", previous_response_id=parent
        )
    assert child.status == "completed"
    assert child.output_text == "echo: after the fault | earlier: the parent"


def _expected(fault: str) -> tuple[int, str]:
    return {
        "html_502": (502, "upstream_error"),
        "rate_limited": (429, "rate_limit_exceeded"),
        "unavailable": (503, "upstream_unavailable"),
        "long_error": (400, "upstream_rejected"),
        "drip": (504, "upstream_timeout"),
        "drip_after_start": (504, "upstream_timeout"),
    }.get(fault, (502, "upstream_invalid_response"))


@pytest.mark.parametrize(
    "model",
    [f"{wire}-{fault}" for wire in ("chat", "resp") for fault in COMMON_FAULTS]
    + [f"chat-{fault}" for fault in CHAT_FAULTS]
    + [f"resp-{fault}" for fault in RESPONSES_FAULTS],
)
def test_non_streamed_faults_are_http_errors_and_store_nothing(
    gateway_url: str, model: str
) -> None:
    parent = _parent(gateway_url)
    body = {"model": model, "input": "x", "previous_response_id": parent}
    response = httpx.post(f"{gateway_url}/v1/responses", json=body, timeout=30)
    status, code = _expected(model.split("-", 1)[1])
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == code
    assert len(error["message"]) < 1200
    assert SECRET_VALUE not in response.text and "sk-misbehaving" not in response.text
    if model.endswith("rate_limited"):
        assert response.headers["retry-after"] == "7"
    if model.endswith("unavailable"):
        assert response.headers["retry-after"] == "11"
    _assert_parent_continues(gateway_url, parent)


@pytest.mark.parametrize(
    "model",
    [f"{wire}-{fault}" for wire in ("chat", "resp") for fault in STREAM_FAULTS]
    + [f"chat-{fault}" for fault in CHAT_STREAM_FAULTS]
    + [f"{wire}-{fault}" for wire in ("chat", "resp") for fault in ("html_200", "empty")]
    + ["anth-drip_after_start"],
)
def test_broken_streams_end_failed_and_are_stored_failed(gateway_url: str, model: str) -> None:
    parent = _parent(gateway_url)
    with _client(gateway_url) as client:
        events = list(
            client.responses.create(
                model=model, input="x", previous_response_id=parent, stream=True
            )
        )
        assert [e.sequence_number for e in events] == list(range(len(events)))
        terminal = [
            e
            for e in events
            if e.type in ("response.completed", "response.incomplete", "response.failed")
        ]
        assert [e.type for e in terminal] == ["response.failed"]
        assert events[-1].type == "response.failed"
        failed = events[-1].response
        assert failed.status == "failed" and failed.error is not None
        assert SECRET_VALUE not in failed.error.message
        assert client.responses.retrieve(failed.id).status == "failed"
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.create(model="echo", input="y", previous_response_id=failed.id)
        assert refused.value.code == "turn_not_continuable"
    _assert_parent_continues(gateway_url, parent)


def test_a_streamed_error_status_is_a_plain_http_error(gateway_url: str) -> None:
    body = {"model": "chat-unavailable", "input": "x", "stream": True}
    response = httpx.post(f"{gateway_url}/v1/responses", json=body, timeout=30)
    assert response.status_code == 503 and response.headers["retry-after"] == "11"
    assert response.json()["error"]["code"] == "upstream_unavailable"


def _http_answer(status: str, body: bytes, *, close: bool = False) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    if close:
        head += "Connection: close\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _chat_answer(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"object": "chat.completion", "choices": [choice]}).encode()


class RefusingUpstream:
    """A raw HTTP/1.1 chat upstream that, once told to, answers 413 to a request as soon as
    its head arrives and closes, leaving its long body unread (as a proxy with a size
    limit does)."""

    def __init__(self) -> None:
        self.refusing = threading.Event()
        self.refused = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                found = re.search(rb"(?i)content-length: *(\d+)", head)
                assert found is not None
                if self.refusing.is_set():
                    self.refused += 1
                    refusal = b'{"error": {"message": "Request entity too large"}}'
                    writer.write(_http_answer("413 Payload Too Large", refusal, close=True))
                    await writer.drain()
                    return
                body = json.loads(await reader.readexactly(int(found.group(1))))
                text = f"read {len(body['messages'])} messages"
                writer.write(_http_answer("200 OK", _chat_answer(text)))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    @contextmanager
    def serving(self) -> Iterator[str]:
        with raw_server(self.handle) as port:
            yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("stream", [False, True])
def test_a_long_body_refused_unread_is_an_error_and_stores_nothing(
    tmp_path: Path, stream: bool
) -> None:
    upstream = RefusingUpstream()
    with upstream.serving() as upstream_url:
        config = parse_config(
            {
                "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
                "providers": {"limited": {**_provider("chat_completions", upstream_url)}},
                "default_provider": "limited",
            },
            env={},
        )
        with serve(create_app(config)) as url, _client(url) as client:
            essay = "word " * 40_000  # 200 KB: sent as a piece of its own once kept
            previous = None
            for turn in range(5):
                text = essay if turn == 0 else f"question {turn}"
                answer = client.responses.create(
                    model="m", input=text, previous_response_id=previous
                )
                previous = answer.id
            assert answer.output_text == "read 9 messages"
            upstream.refusing.set()
            body = {"model": "m", "input": "one more", "previous_response_id": previous}
            refused = httpx.post(f"{url}/v1/responses", json={**body, "stream": stream}, timeout=30)
            # The refusal is relayed, or the connection it closed is reported.
            outcome = (refused.status_code, refused.json()["error"]["code"])
            assert outcome in {(413, "upstream_rejected"), (502, "upstream_unreachable")}
            assert upstream.refused == 1
            with sqlite3.connect(tmp_path / "s.db") as db:
                assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 5
            upstream.refusing.clear()
            again = client.responses.create(
                model="m", input="one more", previous_response_id=previous
            )
            assert again.output_text == "read 11 messages"


@pytest.mark.parametrize(
    ("whole_model", "streamed_model"),
    [(f"{wire}-drip", f"{wire}-drip") for wire in ("chat", "resp", "anth")]
    + [
        (f"{wire}-huge", f"{wire}-{fault}")
        for wire in ("chat", "resp")
        for fault in ("huge", "huge_stream")
    ],
)
def test_a_stream_without_an_event_in_time_fails_as_the_request_not_streamed(
    gateway_url: str, whole_model: str, streamed_model: str
) -> None:
    parent = _parent(gateway_url)
    body = {"input": "x", "previous_response_id": parent}
    url = f"{gateway_url}/v1/responses"
    whole = httpx.post(url, json={**body, "model": whole_model}, timeout=30)
    streamed = httpx.post(url, json={**body, "model": streamed_model, "stream": True}, timeout=30)
    drip = whole_model.endswith("-drip")
    status, code = (504, "upstream_timeout") if drip else (502, "upstream_invalid_response")
    for answer in (whole, streamed):
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json()["error"]["code"] == code
    if drip:
        assert "no stream event within timeout_seconds=1" in streamed.json()["error"]["message"]
    _assert_parent_continues(gateway_url, parent)


@pytest.mark.parametrize("wire", ["chat", "resp", "anth"])
def test_bytes_that_make_no_event_do_not_keep_a_stream_alive(gateway_url: str, wire: str) -> None:
    with _client(gateway_url) as client:
        events = list(
            client.responses.create(model=f"{wire}-drip_after_start", input="x", stream=True)
        )
    failed = events[-1]
    assert failed.type == "response.failed" and failed.response.error is not None
    assert "stream_idle_timeout_seconds=0.5" in failed.response.error.message
