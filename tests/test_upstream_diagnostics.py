"""Upstream failures a person can diagnose from the log line and the client's error alone.

Each failure names the provider, its host:port and what happened (DNS, refusal, TLS, reset,
the limit that ran out, the provider's own message, the path a wrong ``base_url`` missed);
``--log-level debug`` shows each upstream request; a failed request's access line names its
model and project. No key or configured header value is ever shown.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway import create_app, parse_config
from gateway.observability.request_log import AccessLine

from .servers import (
    _bound_port,
    _wait_until_healthy,
    loopback_socket,
    raw_server,
    refusing_url,
    serve,
)

pytestmark = [pytest.mark.api]

KEY = "sk-diagnostics-secret-0123456789"
HEADER_VALUE = "org-header-value-9876"
MASKED_TAIL = "Zq7x"  # the visible end of a key a provider quotes half masked
PROMPT = "a private prompt"


# -- upstreams that fail in one way each -------------------------------------------------


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"id": "c", "object": "chat.completion", "choices": [choice]}


async def _chat(request: Request) -> Response:
    """``/{kind}/v1/chat/completions``: ``kind`` says how to answer."""
    await request.body()
    kind = request.path_params["kind"]
    if kind == "auth":
        message = f"Incorrect API key provided: {KEY}. Or as quoted: sk-diag-********{MASKED_TAIL}."
        error = {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}
        return JSONResponse({"error": error}, 401)
    if kind == "no-model":
        message = "The model `gone` does not exist or you do not have access to it."
        error = {"message": message, "type": "invalid_request_error", "code": "model_not_found"}
        return JSONResponse({"error": error}, 404)
    if kind.startswith("empty-"):
        return Response(status_code=int(kind.removeprefix("empty-")))
    return JSONResponse(_completion("fine"))


def _upstream_app() -> Starlette:
    return Starlette(routes=[Route("/{kind}/v1/chat/completions", _chat, methods=["POST"])])


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    found = re.search(rb"(?i)content-length: *(\d+)", head)
    await reader.readexactly(int(found.group(1)) if found else 0)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset rather than a FIN."""
    writer.get_extra_info("socket").setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
    )
    writer.transport.abort()


async def _resets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    _reset(writer)


async def _closes(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    writer.close()


async def _never_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    await asyncio.Event().wait()  # until the server ends


_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _sse_chunk(event: dict[str, Any]) -> bytes:
    data = b"data: " + json.dumps(event).encode() + b"\n\n"
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


_FIRST_CHUNK = {
    "id": "c",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}],
}


async def _streams_then_falls_silent(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    await _read_request(reader)
    writer.write(_STREAM_HEAD + _sse_chunk(_FIRST_CHUNK))
    await writer.drain()
    await asyncio.Event().wait()


async def _streams_then_closes(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    writer.write(_STREAM_HEAD + _sse_chunk(_FIRST_CHUNK))
    await writer.drain()
    writer.close()


def self_signed_tls(folder: Path) -> ssl.SSLContext:
    """A server context with a certificate no client trusts."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context


@contextmanager
def blackhole() -> Iterator[int]:
    """A port whose listen queue is full: the kernel drops each new SYN, so a connection
    to it is neither accepted nor refused (a firewall that drops packets)."""
    with loopback_socket() as listener:
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                with suppress(BlockingIOError):
                    filler.connect(("127.0.0.1", port))
            yield port
        finally:
            for filler in fillers:
                filler.close()


# -- the gateway in front of them ---------------------------------------------------------


def _provider(base_url: str, **limits: Any) -> dict[str, Any]:
    return {
        "wire_api": "chat_completions",
        "base_url": base_url,
        "api_key": KEY,
        "headers": {"X-Org": HEADER_VALUE},
        **limits,
    }


@contextmanager
def gateway(tmp_path: Path, providers: dict[str, dict[str, Any]]) -> Iterator[str]:
    """The gateway in process, with a model named after each provider and no default."""
    config = parse_config(
        {
            "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
            "providers": providers,
            "models": {name: {"provider": name, "upstream_model": "m"} for name in providers},
        },
        env={},
    )
    with serve(create_app(config)) as url:
        yield url


def ask(url: str, model: str, **fields: Any) -> httpx.Response:
    body = {"model": model, "input": PROMPT, **fields}
    return httpx.post(f"{url}/v1/responses", json=body, timeout=30)


def error_of(response: httpx.Response, status: int, code: str) -> str:
    """The error's message, once its status and code are the expected ones and it shows no
    secret."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    for secret in (KEY, HEADER_VALUE, MASKED_TAIL):
        assert secret not in response.text
    message: str = error["message"]
    return message


def warnings_of(caplog: pytest.LogCaptureFixture) -> str:
    text = "\n".join(
        record.getMessage()
        for record in caplog.records
        if record.name == "gateway.upstream" and record.levelno == logging.WARNING
    )
    for secret in (KEY, HEADER_VALUE, MASKED_TAIL):
        assert secret not in caplog.text
    return text


# -- 1. connections: DNS, refused, TLS, reset, closed, timeouts ---------------------------


def test_a_refused_connection_names_provider_host_port_and_errno(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    with refusing_url() as down, gateway(tmp_path, {"down": _provider(f"{down}/v1")}) as url:
        message = error_of(ask(url, "down"), 502, "upstream_unreachable")
    where = down.removeprefix("http://")
    assert message == (
        f"The upstream provider 'down' at {where} could not be reached: "
        "connection refused (errno 111, ECONNREFUSED)."
    )
    assert (
        f"upstream down: POST {down}/v1/chat/completions could not be reached: "
        "connection refused (errno 111, ECONNREFUSED)"
    ) in warnings_of(caplog)


def test_a_name_that_does_not_resolve_is_a_dns_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    base_url = "http://no-such-provider.invalid:8000/v1"
    with gateway(tmp_path, {"typo": _provider(base_url)}) as url:
        message = error_of(ask(url, "typo"), 502, "upstream_unreachable")
    prefix = (
        "The upstream provider 'typo' at no-such-provider.invalid:8000 could not be reached: "
        "DNS lookup of no-such-provider.invalid failed ("
    )
    assert message.startswith(prefix), message
    assert "DNS lookup of no-such-provider.invalid failed" in warnings_of(caplog)


def test_tls_failures_are_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    untrusted = self_signed_tls(tmp_path)
    with (
        serve(_upstream_app()) as plain,
        raw_server(_closes, untrusted) as tls_port,
        gateway(
            tmp_path,
            {
                "plain": _provider(plain.replace("http://", "https://") + "/ok/v1"),
                "untrusted": _provider(f"https://127.0.0.1:{tls_port}/v1"),
            },
        ) as url,
    ):
        spoken_to_plain = error_of(ask(url, "plain"), 502, "upstream_unreachable")
        untrusted_message = error_of(ask(url, "untrusted"), 502, "upstream_unreachable")
    where = plain.removeprefix("http://")
    assert spoken_to_plain.startswith(
        f"The upstream provider 'plain' at {where} could not be reached: TLS handshake failed ("
    )
    assert "WRONG_VERSION_NUMBER" in spoken_to_plain
    assert "does base_url say https:// for a plain-HTTP server?" in spoken_to_plain
    assert untrusted_message == (
        f"The upstream provider 'untrusted' at 127.0.0.1:{tls_port} could not be reached: "
        "TLS certificate verification failed (self-signed certificate)."
    )
    logged = warnings_of(caplog)
    assert "TLS handshake failed" in logged and "TLS certificate verification failed" in logged


def test_a_reset_and_a_closed_connection_are_told_apart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    with (
        raw_server(_resets) as resetting,
        raw_server(_closes) as closing,
        gateway(
            tmp_path,
            {
                "resets": _provider(f"http://127.0.0.1:{resetting}/v1"),
                "closes": _provider(f"http://127.0.0.1:{closing}/v1"),
            },
        ) as url,
    ):
        reset = error_of(ask(url, "resets"), 502, "upstream_unreachable")
        closed = error_of(ask(url, "closes"), 502, "upstream_unreachable")
    assert reset == (
        f"The upstream provider 'resets' at 127.0.0.1:{resetting} broke off the exchange: "
        "connection reset by peer (errno 104, ECONNRESET)."
    )
    assert closed == (
        f"The upstream provider 'closes' at 127.0.0.1:{closing} broke off the exchange: "
        "the server closed the connection without answering."
    )
    assert f"upstream resets: POST http://127.0.0.1:{resetting}/v1/chat/completions" in (
        warnings_of(caplog)
    )


def test_timeouts_name_the_limit_that_ran_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    with (
        blackhole() as dropping,
        raw_server(_never_answers) as silent,
        gateway(
            tmp_path,
            {
                "dropping": _provider(
                    f"http://127.0.0.1:{dropping}/v1", connect_timeout_seconds=0.2
                ),
                "silent": _provider(f"http://127.0.0.1:{silent}/v1", timeout_seconds=0.2),
            },
        ) as url,
    ):
        no_connection = error_of(ask(url, "dropping"), 504, "upstream_timeout")
        no_answer = error_of(ask(url, "silent"), 504, "upstream_timeout")
        streamed = error_of(ask(url, "silent", stream=True), 504, "upstream_timeout")
    assert no_connection == (
        f"The upstream provider 'dropping' at 127.0.0.1:{dropping} timed out: "
        "no connection within connect_timeout_seconds=0.2."
    )
    assert (
        no_answer
        == streamed
        == (
            f"The upstream provider 'silent' at 127.0.0.1:{silent} timed out: "
            "no answer within timeout_seconds=0.2."
        )
    )
    assert (
        f"upstream silent: POST http://127.0.0.1:{silent}/v1/chat/completions timed out: "
        "no answer within timeout_seconds=0.2"
    ) in warnings_of(caplog)


def _failed_stream(url: str, model: str) -> str:
    """The error message of the ``response.failed`` event a streamed turn ends with."""
    body = {"model": model, "input": PROMPT, "stream": True}
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
        assert response.status_code == 200
        events = [
            json.loads(line.removeprefix("data: "))
            for line in response.iter_lines()
            if line.startswith("data: ")
        ]
    assert events[-1]["type"] == "response.failed", events[-1]
    message: str = events[-1]["response"]["error"]["message"]
    return message


def test_a_stream_that_falls_silent_or_breaks_off_says_how(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    with (
        raw_server(_streams_then_falls_silent) as silent,
        raw_server(_streams_then_closes) as closing,
        gateway(
            tmp_path,
            {
                "silent": _provider(
                    f"http://127.0.0.1:{silent}/v1", stream_idle_timeout_seconds=0.2
                ),
                "closing": _provider(f"http://127.0.0.1:{closing}/v1"),
            },
        ) as url,
    ):
        fell_silent = _failed_stream(url, "silent")
        broke_off = _failed_stream(url, "closing")
    assert fell_silent == (
        f"The upstream provider 'silent' at 127.0.0.1:{silent} went silent mid-stream: "
        "no data within stream_idle_timeout_seconds=0.2."
    )
    assert broke_off == (
        f"The upstream provider 'closing' at 127.0.0.1:{closing} broke off its answer "
        "mid-stream: the connection closed before the answer was complete."
    )
    logged = warnings_of(caplog)
    assert "went silent mid-stream" in logged and "broke off its answer mid-stream" in logged


# -- 2. the provider's own answer: auth failures, wrong paths, empty bodies ----------------


def test_an_auth_failure_relays_the_providers_message_scrubbed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    with (
        serve(_upstream_app()) as upstream,
        gateway(tmp_path, {"keyed": _provider(f"{upstream}/auth/v1")}) as url,
    ):
        message = error_of(ask(url, "keyed"), 502, "upstream_auth_failed")
    where = upstream.removeprefix("http://")
    assert message == (
        f"The upstream provider 'keyed' at {where} rejected the gateway's credentials "
        "(HTTP 401): Incorrect API key provided: ***. Or as quoted: ***"
    )
    assert (
        f"upstream keyed answered HTTP 401 to POST {upstream}/auth/v1/chat/completions: "
        "Incorrect API key provided: ***. Or as quoted: ***"
    ) in warnings_of(caplog)


def test_a_wrong_base_url_names_the_path_not_found(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.upstream")
    with (
        serve(_upstream_app()) as upstream,
        gateway(
            tmp_path,
            {
                "wrong-path": _provider(f"{upstream}/v2"),
                "empty": _provider(f"{upstream}/empty-404/v1"),
                "no-model": _provider(f"{upstream}/no-model/v1"),
            },
        ) as url,
    ):
        wrong = error_of(ask(url, "wrong-path"), 404, "upstream_rejected")
        empty = error_of(ask(url, "empty"), 404, "upstream_rejected")
        no_model = httpx.post(f"{url}/v1/responses", json={"model": "no-model", "input": "x"})
    where = upstream.removeprefix("http://")
    assert wrong == (
        f"The upstream provider 'wrong-path' answered HTTP 404: POST /v2/chat/completions "
        f"not found at {where} — check providers.wrong-path.base_url; its answer: Not Found"
    )
    assert empty == (
        f"The upstream provider 'empty' answered HTTP 404: POST /empty-404/v1/chat/completions "
        f"not found at {where} — check providers.empty.base_url; its answer: (empty body)"
    )
    # A 404 about the model is the provider's word, not a wrong path.
    assert no_model.json()["error"] == {
        "message": f"The upstream provider 'no-model' at {where} rejected the request "
        "(HTTP 404): The model `gone` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
    assert (
        f"upstream wrong-path answered HTTP 404 to POST {upstream}/v2/chat/completions: Not Found"
    ) in warnings_of(caplog)


@pytest.mark.parametrize(
    ("status", "answered", "code", "described"),
    [
        (400, 400, "upstream_rejected", "rejected the request (HTTP 400)"),
        (403, 502, "upstream_auth_failed", "rejected the gateway's credentials (HTTP 403)"),
        (500, 502, "upstream_error", "failed (HTTP 500)"),
    ],
)
def test_an_empty_error_body_says_so(
    tmp_path: Path, status: int, answered: int, code: str, described: str
) -> None:
    with (
        serve(_upstream_app()) as upstream,
        gateway(tmp_path, {"p": _provider(f"{upstream}/empty-{status}/v1")}) as url,
    ):
        message = error_of(ask(url, "p"), answered, code)
    where = upstream.removeprefix("http://")
    assert message == f"The upstream provider 'p' at {where} {described}: (empty body)"


# -- 3. DEBUG: each upstream request, never its headers or body ---------------------------


def _request_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "gateway.upstream" and record.levelno == logging.DEBUG
    ]


def test_debug_logs_each_upstream_request_without_headers_or_bodies(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        serve(_upstream_app()) as upstream,
        gateway(
            tmp_path,
            {"ok": _provider(f"{upstream}/ok/v1"), "gone": _provider(f"{upstream}/empty-404/v1")},
        ) as url,
    ):
        caplog.set_level(logging.INFO)
        assert ask(url, "ok").status_code == 200
        assert _request_lines(caplog) == []  # nothing at INFO
        caplog.set_level(logging.DEBUG)
        assert ask(url, "ok").status_code == 200
        assert ask(url, "gone").status_code == 404
    lines = _request_lines(caplog)
    assert len(lines) == 2, lines
    ok = re.escape(f"upstream ok: POST {upstream}/ok/v1/chat/completions answered HTTP 200 in ")
    gone = re.escape(
        f"upstream gone: POST {upstream}/empty-404/v1/chat/completions answered HTTP 404 in "
    )
    assert re.fullmatch(ok + r"\d+\.\d ms", lines[0]), lines[0]
    assert re.fullmatch(gone + r"\d+\.\d ms", lines[1]), lines[1]
    for secret in (KEY, HEADER_VALUE, PROMPT, "Bearer", "X-Org"):
        assert secret not in caplog.text


# -- 4. the access line of a failed request names its model and project ------------------


def _access_fields(caplog: pytest.LogCaptureFixture, count: int) -> list[dict[str, Any]]:
    """The fields of the first ``count`` access lines, once they are logged (after their
    answer is sent)."""
    deadline = time.monotonic() + 30
    while True:
        lines = [
            record.msg.fields() for record in caplog.records if isinstance(record.msg, AccessLine)
        ]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.01)


def test_failed_requests_access_lines_name_model_and_project(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.access")
    with (
        refusing_url() as down,
        serve(_upstream_app()) as upstream,
        gateway(
            tmp_path,
            {"down": _provider(f"{down}/v1"), "ok": _provider(f"{upstream}/ok/v1")},
        ) as url,
    ):
        answers = [
            ask(url, "down"),
            ask(url, "down", stream=True),
            ask(url, "not-routed"),
            ask(url, "ok", previous_response_id="resp_missing"),
            httpx.post(f"{url}/v1/responses/compact", json={"model": "down", "input": "x"}),
        ]
        lines = _access_fields(caplog, len(answers))
    assert [answer.status_code for answer in answers] == [502, 502, 404, 400, 502]
    assert [(line["status"], line["model"], line["project"]) for line in lines] == [
        (502, "down", "default"),
        (502, "down", "default"),
        (404, "not-routed", "default"),
        (400, "ok", "default"),
        (502, "down", "default"),
    ]


# -- the log level given to `gateway serve` reaches the gateway's loggers -----------------


@pytest.mark.system
def test_log_level_debug_shows_upstream_requests_in_the_served_log(tmp_path: Path) -> None:
    with serve(_upstream_app()) as upstream:
        config = {
            "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
            "providers": {"ok": _provider(f"{upstream}/ok/v1")},
            "models": {"ok": {"provider": "ok"}},
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        log = tmp_path / "gateway.log"
        command = [sys.executable, "-m", "gateway", "serve", "--config", str(path)]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*command, "--port", "0", "--log-level", "debug"],
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            port = _bound_port(process, log, 0)
            assert port is not None, log.read_text()
            url = f"http://127.0.0.1:{port}"
            _wait_until_healthy(process, log, url)
            assert ask(url, "ok").status_code == 200
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    text = log.read_text()
    line = "DEBUG gateway.upstream [req_"
    assert line in text, text
    assert f"upstream ok: POST {upstream}/ok/v1/chat/completions answered HTTP 200 in " in text
    for secret in (KEY, HEADER_VALUE, PROMPT):
        assert secret not in text
