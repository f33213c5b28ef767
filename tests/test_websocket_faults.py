"""WebSocket mode under faults: failed continuations, long-lived and abandoned sockets,
cross-site pages and keys in URLs."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve, start_instance
from .test_inbound_limits import write_config
from .test_websocket import raw_turn, ws_url

pytestmark = [pytest.mark.api]

FAILURES: dict[str, tuple[dict[str, Any], Reply | None]] = {
    "upstream_500": ({}, Reply(status=500)),
    "invalid_parameter": ({"temperature": 9}, None),
    "stream_broken": ({}, Reply(text="cut short in the middle", break_after=1)),
    "unknown_call_id": (
        {"input": [{"type": "function_call_output", "call_id": "call_missing", "output": "x"}]},
        None,
    ),
}


@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_continuation_forgets_the_response_it_named(
    gateway: Gateway, failure: str
) -> None:
    extra, reply = FAILURES[failure]
    with connect(ws_url(gateway.url)) as socket:
        first = raw_turn(
            socket,
            {"type": "response.create", "model": "chat-model", "input": "Hi.", "store": False},
        )
        assert first[-1]["type"] == "response.completed"
        remembered = first[-1]["response"]["id"]
        if reply is not None:
            gateway.fake.script(reply)
        continuation = {
            "type": "response.create",
            "model": "chat-model",
            "store": False,
            "previous_response_id": remembered,
        }
        failed = raw_turn(socket, {**continuation, "input": "Go on.", **extra})
        assert failed[-1]["type"] in ("error", "response.failed")
        again = raw_turn(socket, {**continuation, "input": "Go on again."})
        assert [event["type"] for event in again] == ["error"]
        assert again[0]["status"] == 400
        assert again[0]["error"]["code"] == "previous_response_not_found"
        assert again[0]["error"]["param"] == "previous_response_id"
        fresh = raw_turn(socket, {"type": "response.create", "model": "chat-model", "input": "x"})
        assert fresh[-1]["type"] == "response.completed"  # the socket keeps serving


def test_a_continuation_that_succeeds_is_the_one_remembered(gateway: Gateway) -> None:
    with connect(ws_url(gateway.url)) as socket:
        frame = {"type": "response.create", "model": "chat-model", "store": False}
        first = raw_turn(socket, {**frame, "input": "one"})[-1]["response"]["id"]
        second = raw_turn(socket, {**frame, "input": "two", "previous_response_id": first})
        assert second[-1]["type"] == "response.completed"
        third = raw_turn(
            socket,
            {**frame, "input": "three", "previous_response_id": second[-1]["response"]["id"]},
        )
        assert third[-1]["type"] == "response.completed"
    user_texts = [m["content"] for m in gateway.fake.last["messages"] if m["role"] == "user"]
    assert user_texts == ["one", "two", "three"]


# -- pages of other sites ------------------------------------------------------------------


@pytest.fixture
def gateway_with_origins(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> Iterator[tuple[str, FakeUpstream]]:
    fake, url = fake_upstream
    server = {"allowed_origins": ["https://App.example/"]}
    config = gateway_config(url, tmp_path / "o.db", server=server)
    with serve(create_app(config)) as gateway_url:
        yield gateway_url, fake


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://localhost:3000"])
def test_a_socket_opened_by_another_site_is_refused(gateway: Gateway, origin: str) -> None:
    with (
        pytest.raises(InvalidStatus) as refused,
        connect(ws_url(gateway.url), origin=Origin(origin)) as socket,
    ):
        raw_turn(socket, {"type": "response.create", "model": "chat-model", "input": "spend"})
    response = refused.value.response
    assert response.status_code == 403
    assert response.headers["content-type"].startswith("application/json")
    error = json.loads(response.body or b"")["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_origin"
    assert "server.allowed_origins" in error["message"] and error["param"] is None
    assert gateway.fake.requests == []


@pytest.mark.parametrize("origin", [None, "own", "https://app.example"])
def test_sockets_without_an_origin_or_from_an_allowed_one_are_served(
    gateway_with_origins: tuple[str, FakeUpstream], origin: str | None
) -> None:
    url = gateway_with_origins[0]
    sent = url if origin == "own" else origin  # http://127.0.0.1:PORT, as Host says
    with connect(ws_url(url), origin=Origin(sent) if sent else None) as socket:
        turn = raw_turn(socket, {"type": "response.create", "model": "chat-model", "input": "hi"})
    assert turn[-1]["type"] == "response.completed"


# -- a gateway process: its own HTTP protocol and its log ------------------------------------


@pytest.fixture
def instance(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> Iterator[tuple[subprocess.Popen[bytes], str, FakeUpstream]]:
    fake = fake_upstream[0]
    config = write_config(tmp_path / "config.yaml", fake_upstream[1], header_timeout_seconds=0.5)
    process, url = start_instance(config)
    try:
        yield process, url, fake
    finally:
        process.terminate()
        process.wait(timeout=30)


def server_log(tmp_path: Path) -> str:
    return next(tmp_path.glob("gateway-*.log")).read_text()


@pytest.mark.system
def test_a_socket_outlives_the_header_timeout_busy_and_idle(
    instance: tuple[Any, str, FakeUpstream],
) -> None:
    url, fake = instance[1], instance[2]
    frame = {"type": "response.create", "model": "chat-model"}
    opened = time.monotonic()
    with connect(ws_url(url)) as socket:
        assert raw_turn(socket, {**frame, "input": "first"})[-1]["type"] == "response.completed"
        time.sleep(0.8)  # idle past the 0.5 s header timeout
        fake.script(Reply(text="a slow answer in several pieces", delay=0.2))
        slow = raw_turn(socket, {**frame, "input": "slow"})  # in flight past it too
        assert slow[-1]["type"] == "response.completed"
        time.sleep(0.8)
        last = raw_turn(socket, {**frame, "input": "last"})
        assert last[-1]["response"]["output"][0]["content"][0]["text"] == "reply to: last"
        assert time.monotonic() - opened > 4 * 0.5


def abandon(url: str) -> str:
    """Start a slow turn, read its first event, then drop the TCP connection mid-turn."""
    connection: ClientConnection = connect(ws_url(url))
    connection.send(json.dumps({"type": "response.create", "model": "chat-model", "input": "x"}))
    created = json.loads(connection.recv(timeout=30))
    connection.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    connection.socket.shutdown(socket.SHUT_RDWR)
    with suppress(Exception):
        connection.close()
    response_id: str = created["response"]["id"]
    return response_id


@pytest.mark.system
def test_a_client_that_drops_its_socket_mid_turn_is_no_error(
    instance: tuple[Any, str, FakeUpstream], tmp_path: Path
) -> None:
    url, fake = instance[1], instance[2]
    fake.script(*[Reply(text="an answer the client leaves early", delay=0.2)] * 5)
    with ThreadPoolExecutor(5) as pool:
        dropped = list(pool.map(lambda _: abandon(url), range(5)))
    for response_id in dropped:
        for _ in range(100):  # bounded wait for the turn to finish without its client
            status = httpx.get(f"{url}/v1/responses/{response_id}").json()["status"]
            if status != "in_progress":
                break
            time.sleep(0.05)
        assert status == "completed"
    log = server_log(tmp_path)
    assert "ERROR" not in log and "Traceback" not in log and "Exception" not in log, log


@pytest.mark.system
def test_no_log_line_holds_a_query_string(
    instance: tuple[Any, str, FakeUpstream], tmp_path: Path
) -> None:
    url = instance[1]
    secret = "sk-in-the-query-0123456789"
    with connect(f"{ws_url(url)}?api_key={secret}") as socket:
        frame = {"type": "response.create", "model": "echo", "input": "hi"}
        assert raw_turn(socket, frame)[-1]["type"] == "response.completed"
    assert httpx.get(f"{url}/healthz?key={secret}").status_code == 200
    log = server_log(tmp_path)
    assert secret not in log
    assert '"WebSocket /v1/responses" [accepted]' in log
    evil = Origin("https://evil.example")
    with pytest.raises(InvalidStatus), connect(f"{ws_url(url)}?key={secret}", origin=evil):
        pass
    log = server_log(tmp_path)
    assert '"WebSocket /v1/responses" 403' in log
    assert secret not in log
