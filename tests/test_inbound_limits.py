"""A real ``gateway serve`` process under hostile connections, cross-site requests and SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .fake_upstream import FakeUpstream, Reply
from .servers import start_instance

pytestmark = [pytest.mark.system]


def write_config(path: Path, upstream_url: str, **server: Any) -> Path:
    config = {
        "server": {
            "header_timeout_seconds": 0.5,
            "body_timeout_seconds": 0.5,
            "keep_alive_seconds": 1,
            "max_connections": 8,
            "shutdown_grace_seconds": 1,
            **server,
        },
        "session": {"sqlite": {"path": str(path.parent / "s.db")}},
        "providers": {
            "fake": {"wire_api": "chat_completions", "base_url": f"{upstream_url}/v1"},
            "echo": {"wire_api": "echo"},
        },
        "models": {"chat-model": {"provider": "fake"}},
        "default_provider": "echo",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def instance(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    process, url = start_instance(write_config(tmp_path / "config.yaml", fake_upstream[1]))
    try:
        yield process, url
    finally:
        process.terminate()
        process.wait(timeout=30)


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def closed_by_server(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or 10 s pass)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        raise AssertionError("the server kept the connection open") from None
    return received


def test_a_request_head_sent_slowly_is_cut(instance: tuple[Any, str]) -> None:
    with closing(connect(instance[1])) as sock:
        sock.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert closed_by_server(sock) == b""


def test_a_connection_that_sends_nothing_is_cut(instance: tuple[Any, str]) -> None:
    with closing(connect(instance[1])) as sock:
        assert closed_by_server(sock) == b""


def test_a_body_sent_slowly_is_408(instance: tuple[Any, str]) -> None:
    with closing(connect(instance[1])) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model"'
        )
        answer = closed_by_server(sock)
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"code":"request_timeout"' in answer


def test_an_idle_keep_alive_connection_is_closed(instance: tuple[Any, str]) -> None:
    with closing(connect(instance[1])) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = closed_by_server(sock)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'{"status":"ok"}')


def test_past_the_connection_limit_requests_get_503_then_recover(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    config = write_config(tmp_path / "config.yaml", fake_upstream[1], body_timeout_seconds=30)
    process, url = start_instance(config)
    try:
        busy = [connect(url) for _ in range(8)]  # eight requests in flight, waiting for bodies
        try:
            for sock in busy:
                sock.sendall(
                    b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
            for _ in range(50):  # bounded wait for the server to read all eight
                refused = httpx.get(f"{url}/v1/models")
                if refused.status_code == 503:
                    break
                time.sleep(0.05)
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"] == {
                "message": "The gateway is at its limit of requests in flight "
                "(server.max_connections). Try again shortly.",
                "type": "server_error",
                "param": None,
                "code": "server_busy",
            }
            assert httpx.get(f"{url}/healthz").status_code == 200  # probes have a reserve
            assert "gateway_refused_total" in httpx.get(f"{url}/metrics").text
        finally:
            for sock in busy:
                sock.close()
        for _ in range(50):  # bounded wait for the server to see the closed sockets
            if httpx.get(f"{url}/healthz").status_code == 200:
                break
            time.sleep(0.05)
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert 'gateway_refused_total{reason="busy"}' in httpx.get(f"{url}/metrics").text
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_running_out_of_file_descriptors_is_quiet_and_recovers(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    config = write_config(tmp_path / "config.yaml", fake_upstream[1], header_timeout_seconds=5)
    process, url = start_instance(config, max_open_files=64)
    try:
        flood = []
        for _ in range(200):
            try:
                flood.append(connect(url))
            except OSError:
                break
        time.sleep(1)
        for sock in flood:
            sock.close()
        for _ in range(100):  # bounded wait until descriptors are free again
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        assert httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
    log = next(tmp_path.glob("gateway-*.log")).read_text()
    assert len(log.splitlines()) < 50, log[:2000]


def test_cross_site_requests_are_refused(instance: tuple[Any, str]) -> None:
    url = instance[1]
    body = json.dumps({"model": "echo", "input": "x"})
    form = httpx.post(f"{url}/v1/responses", content=body, headers={"content-type": "text/plain"})
    assert form.status_code == 415 and form.json()["error"]["code"] == "unsupported_media_type"
    rebound = httpx.post(
        f"{url}/v1/responses",
        content=body,
        headers={"content-type": "application/json", "host": "attacker.example:8080"},
    )
    assert rebound.status_code == 400 and rebound.json()["error"]["code"] == "invalid_host"
    local = httpx.post(
        f"{url}/v1/responses",
        content=body,
        headers={"content-type": "application/json", "host": "localhost:8080"},
    )
    assert local.status_code == 200


def test_sigterm_finishes_or_fails_streams_in_flight_then_exits(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake = fake_upstream[0]
    fake.script(Reply(text="a long answer", delay=1.0))  # ~6 chunks, one a second
    process, url = start_instance(write_config(tmp_path / "config.yaml", fake_upstream[1]))
    body = {"model": "chat-model", "input": "long", "stream": True}
    try:
        with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data: "))
            process.send_signal(signal.SIGTERM)
            events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
        assert events[-1]["type"] == "response.failed"
        assert "shut down" in events[-1]["response"]["error"]["message"]
        assert process.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises it
    finally:
        if process.poll() is None:
            process.kill()
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        assert conn.execute("SELECT status FROM responses").fetchall() == [("failed",)]


def test_several_workers_serve_one_port_and_share_the_store(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    config = write_config(tmp_path / "config.yaml", fake_upstream[1], workers=2)
    process, url = start_instance(config)
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        assert len(children) == 2
        previous = None
        with httpx.Client(base_url=url, timeout=30) as client:
            for turn in range(8):  # fresh connections land on either worker
                body = {"model": "echo", "input": f"turn {turn}", "previous_response_id": previous}
                response = client.post("/v1/responses", json=body, headers={"connection": "close"})
                assert response.status_code == 200, response.text
                previous = response.json()["id"]
        last = response.json()["output"][0]["content"][0]["text"]
        assert last.startswith("echo: turn 7 | earlier: turn 0 / turn 1")
    finally:
        process.terminate()
        assert process.wait(timeout=30) in (0, -signal.SIGTERM)
    assert all(not Path(f"/proc/{pid}").exists() for pid in children)
