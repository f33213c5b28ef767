"""A client that hangs up before its body is sent is one access line with 499, no error; an
unexpected exception is one ERROR line (the gateway's, with the request id), not two."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
import pytest
from starlette.types import ASGIApp

from gateway import create_app
from session import MemoryStore, StoredResponse

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve
from .test_observability import scrape

pytestmark = [pytest.mark.api]

REQUESTS = "gateway_requests_total"


@contextmanager
def served(app: ASGIApp, caplog: pytest.LogCaptureFixture) -> Iterator[str]:
    """``app`` on a loopback port, every line at INFO and above caught, uvicorn's too (the
    logging configuration each server makes stops them reaching the root logger)."""
    caplog.set_level(logging.INFO)
    with serve(app) as url:
        uvicorn = logging.getLogger("uvicorn")
        uvicorn.addHandler(caplog.handler)
        try:
            yield url
        finally:
            uvicorn.removeHandler(caplog.handler)


def statuses(url: str, route: str) -> dict[str, float]:
    """The statuses counted for ``route`` in ``/metrics``."""
    return {
        dict(labels)["status"]: count
        for (name, labels), count in scrape(url).items()
        if name == REQUESTS and dict(labels)["route"] == route
    }


def counted_once(url: str, route: str) -> dict[str, float]:
    """``route``'s statuses once one is counted (a bounded wait, not a speed check)."""
    deadline = time.monotonic() + 30
    while not (found := statuses(url, route)):
        assert time.monotonic() < deadline, "the request was never counted"
        time.sleep(0.02)
    return found


def hang_up_mid_body(url: str, path: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with closing(socket.create_connection((host, int(port)), timeout=30)) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n".encode()
            + b'{"model": "echo", "inp'
        )


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/v1/responses", "/v1/responses"),
        ("/v1/store/conversations", "/v1/store/conversations"),
        ("/v1/gateway/console/login", "/v1/gateway/console/login"),
    ],
)
def test_a_client_that_hangs_up_mid_body_is_one_info_line_and_no_5xx(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    path: str,
    route: str,
) -> None:
    config = gateway_config(fake_upstream[1], tmp_path / "s.db")
    with served(create_app(config), caplog) as url:
        hang_up_mid_body(url, path)
        assert counted_once(url, route) == {"499": 1.0}
        assert not any(status.startswith("5") for status in statuses(url, "unmatched"))
    assert all(record.levelname == "INFO" for record in caplog.records), caplog.text
    # Besides uvicorn's lines on starting and stopping, and the test client's own.
    records = [record for record in caplog.records if record.name not in ("uvicorn", "httpx")]
    assert {record.name for record in records} == {"gateway.access"}, caplog.text
    hung_up = [record for record in records if f'"POST {path}" 499 ' in record.getMessage()]
    assert len(hung_up) == 1
    assert all(record.exc_info is None for record in caplog.records)
    assert "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]


class BrokenStore(MemoryStore):
    """A store with a bug: reading a response raises what no handler expects."""

    async def get(self, project: str, response_id: str) -> StoredResponse:
        raise RuntimeError("a bug in the store")


def test_an_unexpected_exception_is_logged_once_and_answered_500(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = gateway_config(fake_upstream[1], tmp_path / "s.db")
    with served(create_app(config, store=BrokenStore()), caplog) as url:
        answer = httpx.get(f"{url}/v1/responses/resp_1", headers={"x-request-id": "req-bug"})
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert error["type"] == "server_error" and error["code"] == "server_error"
        assert "bug" not in answer.text and "Traceback" not in answer.text
        assert statuses(url, "/v1/responses/{id}") == {"500": 1.0}
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert [record.name for record in errors] == ["gateway"], caplog.text
    assert errors[0].exc_info is not None and "GET /v1/responses/resp_1" in errors[0].getMessage()
    assert (
        caplog.text.count("Traceback") == 1 and "Exception in ASGI application" not in caplog.text
    )
    access = [record for record in caplog.records if record.name == "gateway.access"]
    assert '"GET /v1/responses/resp_1" 500 ' in access[0].getMessage()
