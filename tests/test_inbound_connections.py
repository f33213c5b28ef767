"""Connections that send no request do not starve those that do, and what the server's
limits close or refuse shows in ``/metrics``."""

from __future__ import annotations

import json
import re
import socket
import time
from contextlib import ExitStack, closing
from pathlib import Path

import httpx
import pytest
import yaml
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from .fake_upstream import FakeUpstream
from .servers import start_instance
from .test_inbound_limits import closed_by_server, connect, write_config
from .test_websocket import raw_turn, ws_url

pytestmark = [pytest.mark.system]


def refused(metrics: str, reason: str) -> float:
    found = re.search(rf'^gateway_refused_total\{{reason="{reason}"\}} (\S+)$', metrics, re.M)
    return float(found.group(1)) if found else 0.0


def test_idle_connections_make_room_for_requests(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    config = write_config(
        tmp_path / "config.yaml",
        fake_upstream[1],
        max_connections=20,
        header_timeout_seconds=30,
        keep_alive_seconds=30,
    )
    process, url = start_instance(config)
    try:
        with ExitStack() as stack:
            idle = [stack.enter_context(closing(connect(url))) for _ in range(30)]
            with httpx.Client(base_url=url) as client:  # one keep-alive connection
                answers = []
                for _ in range(20):
                    answers.append(client.get("/healthz").status_code)
                    answers.append(httpx.get(f"{url}/healthz").status_code)  # a new one each
                    time.sleep(0.01)
                assert answers == [200] * 40
                metrics = client.get("/metrics").text
            assert refused(metrics, "idle_closed") >= 10  # 30 idle + the clients' > 20
            assert refused(metrics, "busy") == 0
            assert closed_by_server(idle[0]) == b""  # the oldest were closed first
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_connection_cut_for_a_slow_head_is_counted(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    process, url = start_instance(write_config(tmp_path / "config.yaml", fake_upstream[1]))
    try:
        with closing(connect(url)) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")
            assert closed_by_server(sock) == b""
        with closing(connect(url)) as sock:
            assert closed_by_server(sock) == b""
        metrics = httpx.get(f"{url}/metrics").text
        assert refused(metrics, "head_timeout") == 2
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_an_open_websocket_is_not_taken_for_an_idle_connection(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    config = write_config(tmp_path / "config.yaml", fake_upstream[1], max_connections=4)
    process, url = start_instance(config)
    frame = {"type": "response.create", "model": "echo", "input": "still here"}
    try:
        with ws_connect(ws_url(url)) as socket:
            with ExitStack() as stack:
                for _ in range(8):
                    stack.enter_context(closing(connect(url)))
                assert httpx.get(f"{url}/healthz").status_code == 200
            assert raw_turn(socket, frame)[-1]["type"] == "response.completed"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_idle_sockets_of_one_key_leave_room_for_everyone_else(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    """Sockets count against caps of their own, not against the requests in flight."""
    config = write_config(
        tmp_path / "config.yaml",
        fake_upstream[1],
        max_connections=4,
        max_websockets_per_key=6,
    )
    hoarder, other, admin = "sk-hoarding-0123456789", "sk-the-other-0123456789", "a" * 24
    raw = yaml.safe_load(config.read_text())
    raw["auth"] = {
        "mode": "keys",
        "admin_key": admin,
        "keys": [{"key": hoarder, "project": "b"}, {"key": other, "project": "a"}],
    }
    config.write_text(yaml.safe_dump(raw))
    process, url = start_instance(config)
    frame = {"type": "response.create", "model": "echo", "input": "still here"}
    try:
        with ExitStack() as stack:
            held = [
                stack.enter_context(
                    ws_connect(
                        ws_url(url), additional_headers={"authorization": f"Bearer {hoarder}"}
                    )
                )
                for _ in range(6)
            ]
            with pytest.raises(InvalidStatus) as refused_socket:
                ws_connect(ws_url(url), additional_headers={"authorization": f"Bearer {hoarder}"})
            assert refused_socket.value.response.status_code == 429
            body = json.loads(refused_socket.value.response.body or b"")
            assert body["error"]["code"] == "too_many_websockets"
            with httpx.Client(base_url=url, headers={"authorization": f"Bearer {other}"}) as client:
                answers = [
                    client.post("/v1/responses", json={"model": "echo", "input": "hi"}).status_code
                    for _ in range(10)
                ]
                probes = [client.get("/healthz").status_code for _ in range(10)]
                metrics = client.get("/metrics", headers={"authorization": f"Bearer {admin}"})
            assert answers == [200] * 10 and probes == [200] * 10
            assert metrics.status_code == 200
            assert "gateway_open_websockets 6.0" in metrics.text
            assert raw_turn(held[0], frame)[-1]["type"] == "response.completed"
    finally:
        process.terminate()
        process.wait(timeout=30)


def read_answer(sock: socket.socket) -> tuple[dict[str, str], bytes]:
    """One response's headers (lower-case names) and body, read off a kept connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return headers, body


@pytest.mark.parametrize("keep_alive", [30, 1])
def test_a_kept_connection_tells_the_client_to_close_it_first(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str], keep_alive: int
) -> None:
    config = write_config(tmp_path / "config.yaml", fake_upstream[1], keep_alive_seconds=keep_alive)
    process, url = start_instance(config)
    try:
        with closing(connect(url)) as sock:
            for _ in range(2):
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                headers, body = read_answer(sock)
                assert body == b'{"status":"ok"}' and "connection" not in headers
                assert headers["keep-alive"] == f"timeout={keep_alive - 1}"
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            headers, _ = read_answer(sock)
            assert headers["connection"] == "close" and "keep-alive" not in headers
        with closing(connect(url)) as sock:
            sock.sendall(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            headers, _ = read_answer(sock)
            assert headers["connection"] == "close" and "keep-alive" not in headers
        turn = httpx.post(f"{url}/v1/responses", json={"model": "echo", "input": "x"})
        assert turn.headers["keep-alive"] == f"timeout={keep_alive - 1}"
    finally:
        process.terminate()
        process.wait(timeout=30)
