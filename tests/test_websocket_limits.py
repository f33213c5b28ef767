"""What bounds a WebSocket: its key checked on every turn, caps per key, per project and
in all, an idle time-out; and one access line per turn, as for an HTTP request."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.sync.connection import Connection

from gateway import create_app
from gateway.config import ConfigError, GatewayConfig
from gateway.observability.request_log import AccessLine
from session import build_store, new_key

from .conftest import gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve
from .test_websocket import raw_turn, ws_url

pytestmark = [pytest.mark.api]

ADMIN = "admin-key-0123456789abcdef"
FRAME = {"type": "response.create", "model": "echo", "input": "hi"}


@dataclass
class Keyed:
    """A gateway with managed keys, made as ``gateway keys create`` makes them."""

    url: str
    config: GatewayConfig

    def create_key(self, project: str) -> tuple[str, str]:
        key, secret = new_key(project, name="socket")
        self._on_store(lambda store: store.create_key(key))
        return key.id, secret

    def revoke_key(self, key_id: str) -> None:
        self._on_store(lambda store: store.revoke_key(key_id))

    def _on_store(self, action: Any) -> None:
        async def run() -> None:
            store = build_store(self.config.session)
            try:
                await action(store)
            finally:
                await store.close()

        asyncio.run(run())

    def socket(self, secret: str) -> ClientConnection:
        return connect(ws_url(self.url), additional_headers={"authorization": f"Bearer {secret}"})


def keyed_gateway(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, **server: Any
) -> Iterator[Keyed]:
    auth = {"mode": "keys", "admin_key": ADMIN, "cache_seconds": 0}
    config = gateway_config(fake_upstream[1], tmp_path / "keys.db", auth=auth, server=server)
    with serve(create_app(config)) as url:
        yield Keyed(url, config)


@pytest.fixture
def keyed(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Keyed]:
    yield from keyed_gateway(
        fake_upstream, tmp_path, max_websockets_per_key=2, max_websockets_per_project=3
    )


def close_code(socket: Connection) -> int | None:
    """The code the server closed ``socket`` with, once it has."""
    with pytest.raises(ConnectionClosed) as closed:
        socket.recv(timeout=30)
    return None if closed.value.rcvd is None else closed.value.rcvd.code


def test_a_key_revoked_while_its_socket_is_open_is_refused_on_the_next_turn(
    keyed: Keyed,
) -> None:
    key_id, secret = keyed.create_key("p")
    with keyed.socket(secret) as socket:
        assert raw_turn(socket, FRAME)[-1]["type"] == "response.completed"
        keyed.revoke_key(key_id)  # auth.cache_seconds: 0, so the next lookup sees it
        refused = raw_turn(socket, FRAME)
        assert refused == [
            {
                "type": "error",
                "status": 401,
                "error": {
                    "message": "Incorrect API key provided, or the key was revoked.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                },
            }
        ]
        assert close_code(socket) == 1008
    with pytest.raises(InvalidStatus) as upgrade:  # as a new socket is
        keyed.socket(secret).close()
    assert upgrade.value.response.status_code == 401


def refusal(error: InvalidStatus) -> tuple[int, dict[str, Any]]:
    response = error.response
    assert response.headers["content-type"] == "application/json"
    return response.status_code, json.loads(response.body or b"")


def test_sockets_past_a_keys_or_projects_cap_are_refused_before_the_upgrade(
    keyed: Keyed,
) -> None:
    _, first = keyed.create_key("busy")
    _, second = keyed.create_key("busy")
    _, other = keyed.create_key("quiet")
    with ExitStack() as open_sockets:
        for _ in range(2):
            open_sockets.enter_context(keyed.socket(first))
        with pytest.raises(InvalidStatus) as per_key:
            keyed.socket(first).close()
        status, body = refusal(per_key.value)
        assert status == 429 and body["error"]["code"] == "too_many_websockets"
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert "this API key has 2 WebSockets open" in body["error"]["message"]
        open_sockets.enter_context(keyed.socket(second))  # the project's third
        with pytest.raises(InvalidStatus) as per_project:
            keyed.socket(second).close()
        status, body = refusal(per_project.value)
        assert status == 429 and "this project has 3 WebSockets open" in body["error"]["message"]
        with keyed.socket(other) as quiet:  # another project is not concerned
            assert raw_turn(quiet, FRAME)[-1]["type"] == "response.completed"
        answer = httpx.post(
            f"{keyed.url}/v1/responses",
            json={"model": "echo", "input": "hi"},
            headers={"authorization": f"Bearer {first}"},
        )
        assert answer.status_code == 200  # the key's HTTP requests are not concerned
        metrics = httpx.get(
            f"{keyed.url}/metrics", headers={"authorization": f"Bearer {ADMIN}"}
        ).text
        assert "gateway_open_websockets 3.0" in metrics
        assert 'gateway_refused_total{reason="websockets_per_key"} 1.0' in metrics
        assert 'gateway_refused_total{reason="websockets_per_project"} 1.0' in metrics
    with keyed.socket(first) as again:  # closed sockets give their places back
        assert raw_turn(again, FRAME)[-1]["type"] == "response.completed"


def test_past_the_processs_cap_a_socket_is_refused_with_503(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    config = gateway_config(fake_upstream[1], tmp_path / "w.db", server={"max_websockets": 1})
    with serve(create_app(config)) as url, connect(ws_url(url)) as held:
        with pytest.raises(InvalidStatus) as full:
            connect(ws_url(url)).close()
        status, body = refusal(full.value)
        assert status == 503 and body["error"]["code"] == "server_busy"
        assert full.value.response.headers["retry-after"] == "1"
        assert raw_turn(held, FRAME)[-1]["type"] == "response.completed"


def test_a_socket_idle_past_its_time_is_told_and_closed(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    server = {"websocket_idle_seconds": 1}
    config = gateway_config(fake_upstream[1], tmp_path / "w.db", server=server)
    fake_upstream[0].script(Reply(text="a slow answer in four pieces", delay=0.6))
    slow = {"type": "response.create", "model": "chat-model", "input": "take your time"}
    with serve(create_app(config)) as url:
        with connect(ws_url(url)) as socket:  # a turn longer than the idle time is not idle
            assert raw_turn(socket, slow)[-1]["type"] == "response.completed"
        with connect(ws_url(url)) as socket:
            told = json.loads(socket.recv(timeout=30))
            assert told == {
                "type": "error",
                "status": 400,
                "error": {
                    "message": "The WebSocket received no frame in 1 s "
                    "(server.websocket_idle_seconds) and was closed. Open a new one to continue.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "websocket_idle_timeout",
                },
            }
            assert close_code(socket) == 1000


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        record.msg.fields()
        for record in caplog.records
        if record.name == "gateway.access" and isinstance(record.msg, AccessLine)
    ]


def test_every_turn_on_a_socket_has_its_access_line(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.access")
    config = gateway_config(fake_upstream[1], tmp_path / "w.db")
    headers = {"x-request-id": "req-socket-lines"}
    chat = {"type": "response.create", "model": "chat-model", "input": "hello there"}
    with (
        serve(create_app(config)) as url,
        connect(ws_url(url), additional_headers=headers) as socket,
    ):
        assert raw_turn(socket, chat)[-1]["type"] == "response.completed"
        socket.send('{"type": "response.processed"}')  # an acknowledgement, no turn
        assert raw_turn(socket, {**FRAME, "temperature": 9})[0]["status"] == 400
        assert raw_turn(socket, FRAME)[-1]["type"] == "response.completed"
    lines = access_lines(caplog)
    assert [(line["method"], line["path"], line["status"]) for line in lines] == [
        ("WEBSOCKET", "/v1/responses", 200),
        ("WEBSOCKET", "/v1/responses", 400),
        ("WEBSOCKET", "/v1/responses", 200),
    ]
    chat_line, bad, echo = lines
    assert chat_line["model"] == "chat-model" and chat_line["project"] == "default"
    assert chat_line["input_tokens"] > 0 and chat_line["output_tokens"] > 0
    assert chat_line["duration_ms"] >= chat_line["upstream_ms"] > 0
    assert bad["model"] == "echo" and bad["input_tokens"] is None
    assert echo["model"] == "echo"
    ids = {r.msg.log.request_id for r in caplog.records if isinstance(r.msg, AccessLine)}
    assert ids == {"req-socket-lines"}  # each turn's line carries its socket's request id


@pytest.mark.unit
@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("max_websockets", 0, "greater than or equal to 1"),
        ("max_websockets_per_project", 0, "greater than or equal to 1"),
        ("max_websockets_per_key", -1, "greater than or equal to 1"),
        ("websocket_idle_seconds", 0, "greater than 0"),
        ("websocket_idle_seconds", 7200, "less than or equal to 3600"),
        ("websocket_connection_seconds", 0, "greater than 0"),
        ("websocket_max_in_flight", 0, "greater than or equal to 1"),
        ("websocket_max_streams", 0, "greater than or equal to 1"),
    ],
)
def test_socket_limits_are_checked_at_start_up(key: str, value: float, problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        gateway_config("http://127.0.0.1:9", Path("unused.db"), server={key: value})
    assert f"server.{key}: Input should be {problem}" in str(refused.value)
