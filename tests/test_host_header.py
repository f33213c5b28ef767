"""The ``Host`` header, read strictly over real HTTP: ``host[:port]`` of an allowed name, an
IPv6 address in brackets; no userinfo, no path, one header; else a 400 in OpenAI's shape."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve

pytestmark = [pytest.mark.api]

MALFORMED = [
    "localhost:80@evil.com",
    "127.0.0.1:80@evil.com",
    "evil.com@localhost",
    "user:pass@localhost:8080",
    "localhost/evil",
    "localhost:8080/path",
    "localhost?x",
    "localhost#x",
    "localhost:",
    "localhost:abc",
    "localhost:99999",
    "localhost:8080:8080",
    "[::1",
    "[::1]x",
    "[::1]:",
    "[zz::1]",
    "::1",
    "[::1]@evil.com",
    "local host",
    "localhost,evil.com",
    "http://localhost",
    "",
]
ACCEPTED = ["localhost", "localhost:8080", "LocalHost:1", "127.0.0.1", "127.0.0.1:80", "[::1]"]


def exchange(url: str, head: bytes) -> tuple[int, bytes]:
    """``head`` sent as it is on a fresh connection; the answer's status and body."""
    host, port = url.removeprefix("http://").split(":")
    with closing(socket.create_connection((host, int(port)), timeout=30)) as sock:
        sock.sendall(head)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def get(url: str, *hosts: str, version: str = "1.1") -> tuple[int, bytes]:
    lines = "".join(f"Host: {host}\r\n" for host in hosts)
    head = f"GET /v1/models HTTP/{version}\r\n{lines}Connection: close\r\n\r\n"
    return exchange(url, head.encode("latin-1"))


def assert_invalid_host(answer: tuple[int, bytes]) -> None:
    status, body = answer
    assert status == 400, body
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_host"


@pytest.mark.parametrize("host", MALFORMED)
def test_a_host_header_that_is_not_host_and_port_is_refused(gateway: Gateway, host: str) -> None:
    assert_invalid_host(get(gateway.url, host))


@pytest.mark.parametrize("host", ACCEPTED)
def test_an_allowed_name_with_or_without_a_port_is_served(gateway: Gateway, host: str) -> None:
    status, body = get(gateway.url, host)
    assert status == 200, body
    assert json.loads(body)["object"] == "list"


def test_a_bracketed_ipv6_address_with_a_port_is_served(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    config = gateway_config(fake_upstream[1], tmp_path / "s.db")
    with serve(create_app(config)) as url:
        assert get(url, "[::1]:8080")[0] == 200
        assert get(url, "[0:0:0:0:0:0:0:1]:8080")[0] == 400  # the name listed is "[::1]"


def test_two_host_headers_or_none_are_refused(gateway: Gateway) -> None:
    assert_invalid_host(get(gateway.url, "localhost", "localhost"))
    assert_invalid_host(get(gateway.url, "localhost", "evil.example"))
    assert_invalid_host(get(gateway.url))


@pytest.fixture
def any_host(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[str]:
    config = gateway_config(fake_upstream[1], tmp_path / "s.db", server={"allowed_hosts": ["*"]})
    with serve(create_app(config)) as url:
        yield url


def test_with_any_host_allowed_a_malformed_one_is_still_refused(any_host: str) -> None:
    assert get(any_host, "gateway.example:8443")[0] == 200
    assert get(any_host, "[2001:db8::1]")[0] == 200
    assert get(any_host, version="1.0")[0] == 200  # HTTP/1.0 needs no Host
    for host in ("localhost:80@evil.com", "gateway.example/x", "[::1"):
        assert_invalid_host(get(any_host, host))
    assert_invalid_host(get(any_host))
