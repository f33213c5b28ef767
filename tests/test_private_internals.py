"""The private internals of dependencies the gateway relies on, each still there and alike.

Each test names the dependency, its installed release, the internal and the module of ours
that uses it, so a release that changes one fails here rather than in production.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import platform
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from aiohttp.client_proto import ResponseHandler
from aiohttp.connector import Connection
from prometheus_client import CollectorRegistry, Counter, values
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState

from gateway.edge.http_protocol import HeadTimeoutProtocol
from gateway.edge.json_response import EventStream
from gateway.edge.middleware.observe import ObserveMiddleware
from gateway.edge.server import DenyingWebSocketProtocol, GatewayServer, QuerylessPaths
from gateway.observability import request_log
from gateway.observability.metrics import MULTIPROCESS_ENV, Metrics, share_between_processes
from gateway.upstream.transport.http import ProviderClient
from gateway.upstream.transport.payloads import JSONPieces
from session import RequestSnapshot, SQLiteStore, StoredResponse, trusted

pytestmark = [pytest.mark.unit]

SERVER = HeadTimeoutProtocol.__module__
# What HeadTimeoutProtocol overrides on purpose; any other name of its own must be new.
HTTP_OVERRIDES = {
    "connection_made": ["self", "transport"],
    "data_received": ["self", "data"],
    "on_headers_complete": ["self"],
    "on_response_complete": ["self"],
    "handle_websocket_upgrade": ["self"],
    "connection_lost": ["self", "exc"],
}
UPGRADE_HEAD = (
    b"GET /v1/responses?key=sk-secret HTTP/1.1\r\nHost: t\r\n"
    b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


@contextmanager
def relied_on(
    dependency: str, internal: str, user: str, installed: str | None = None
) -> Iterator[None]:
    """Turn any failure inside into one that names what changed and who needs it."""
    release = installed or version(dependency)
    try:
        yield
    except Exception as error:
        pytest.fail(
            f"{dependency} {release} changed {internal}, which {user} relies on: adapt {user}, "
            f"or bound {dependency} below {release} in pyproject.toml.\n"
            f"{type(error).__name__}: {error}"
        )


async def answer_ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def accept_socket(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": 1000})


def loaded_config(app: ASGIApp = answer_ok) -> uvicorn.Config:
    config = uvicorn.Config(app, log_config=None, lifespan="off", ws="websockets-sansio")
    config.load()
    return config


async def exchange(
    protocol_class: type[HttpToolsProtocol],
    head: bytes,
    app: ASGIApp = answer_ok,
    **attributes: Any,
) -> tuple[HttpToolsProtocol, bytes]:
    """``head`` sent to one ``protocol_class`` connection to ``app`` (its ``attributes`` set
    first) over a socket pair; the protocol and the first bytes it answers."""
    loop = asyncio.get_running_loop()
    config, state = loaded_config(app), ServerState()
    ours, theirs = socket.socketpair()
    with theirs:
        theirs.setblocking(False)
        transport, protocol = await loop.connect_accepted_socket(
            lambda: protocol_class(config, state, {}, _loop=loop), ours
        )
        for name, value in attributes.items():
            setattr(protocol, name, value)
        await loop.sock_sendall(theirs, head)
        async with asyncio.timeout(5):
            answer = await loop.sock_recv(theirs, 4096)
        transport.close()
        await asyncio.sleep(0)
    return protocol, answer


def test_uvicorn_http_protocol_methods_we_override_keep_their_shape() -> None:
    for name, parameters in {**HTTP_OVERRIDES, "_should_upgrade": ["self"]}.items():
        with relied_on("uvicorn", f"HttpToolsProtocol.{name}{tuple(parameters)}", SERVER):
            method = getattr(HttpToolsProtocol, name)
            assert list(inspect.signature(method).parameters) == parameters


def test_uvicorn_http_protocol_has_no_names_of_ours() -> None:
    ours = {name for name in vars(HeadTimeoutProtocol) if not name.startswith("__")}
    ours |= {"_head_timer", "_served", *HeadTimeoutProtocol.__annotations__}
    ours -= set(HTTP_OVERRIDES)
    loop = asyncio.new_event_loop()
    with relied_on("uvicorn", "HttpToolsProtocol's own attribute names", SERVER):
        try:
            theirs = HttpToolsProtocol(loaded_config(), ServerState(), {}, _loop=loop)
        finally:
            loop.close()
        assert not ours & (set(dir(HttpToolsProtocol)) | set(vars(theirs)))


async def answer_teapot(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 418, "headers": []})
    await send({"type": "http.response.body", "body": b"busy"})


def test_uvicorn_http_protocol_reads_its_state_from_the_instance() -> None:
    head = b"GET /healthz?probe=1 HTTP/1.1\r\nHost: t\r\n\r\n"
    targets: list[bytes] = []

    class Recording(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            targets.append(self.url)
            super().on_headers_complete()

    internal = "HttpToolsProtocol.app/url/connections/tasks/cycle, read per request"
    with relied_on("uvicorn", internal, SERVER):
        protocol, answer = asyncio.run(exchange(Recording, head))
        assert answer.startswith(b"HTTP/1.1 200")
        assert targets == [b"/healthz?probe=1"]  # the request target, once the head is in
        assert protocol.cycle.response_complete
        assert isinstance(protocol.connections, set) and isinstance(protocol.tasks, set)
        _, refused = asyncio.run(exchange(HttpToolsProtocol, head, app=answer_teapot))
        assert refused.startswith(b"HTTP/1.1 418")


def test_uvicorn_hands_a_websocket_upgrade_to_handle_websocket_upgrade() -> None:
    seen: list[tuple[str, bool]] = []

    class Recording(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            seen.append(("head", self.parser.should_upgrade() and self._should_upgrade()))
            super().on_headers_complete()

        def handle_websocket_upgrade(self) -> None:
            seen.append(("upgrade", True))
            self.transport.write(b"upgraded")

    internal = "parser.should_upgrade(), _should_upgrade() and handle_websocket_upgrade()"
    with relied_on("uvicorn", internal, SERVER):
        asyncio.run(exchange(Recording, UPGRADE_HEAD))
        assert seen == [("head", True), ("upgrade", True)]


def test_uvicorn_websocket_protocol_keeps_handshake_complete() -> None:
    internal = "WebSocketsSansIOProtocol.handshake_complete, read after send(message)"
    loop = asyncio.new_event_loop()
    with relied_on("uvicorn", internal, SERVER):
        try:
            protocol = WebSocketsSansIOProtocol(loaded_config(), ServerState(), {}, _loop=loop)
        finally:
            loop.close()
        assert protocol.handshake_complete is False
        send = WebSocketsSansIOProtocol.send
        assert inspect.iscoroutinefunction(send)
        assert list(inspect.signature(send).parameters) == ["self", "message"]
        assert "self.handshake_complete" in inspect.getsource(WebSocketsSansIOProtocol.run_asgi)


def test_uvicorn_logs_a_websocket_path_as_an_argument(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    internal = 'its WebSocket log lines passing the path as an argument ("WebSocket %s")'
    with relied_on("uvicorn", internal, SERVER):
        _, answer = asyncio.run(exchange(HttpToolsProtocol, UPGRADE_HEAD, app=accept_socket))
        assert answer.startswith(b"HTTP/1.1 101")
        lines = [record for record in caplog.records if "WebSocket" in str(record.msg)]
        assert lines and all("sk-secret" not in str(record.msg) for record in lines)
        assert any("sk-secret" in record.getMessage() for record in lines)
        for record in lines:
            QuerylessPaths().filter(record)
            assert "sk-secret" not in record.getMessage()


def test_uvicorn_config_takes_protocol_classes() -> None:
    with relied_on("uvicorn", "Config(http=<class>, ws=<class>)", SERVER):
        config = uvicorn.Config(
            answer_ok, log_config=None, http=HeadTimeoutProtocol, ws=DenyingWebSocketProtocol
        )
        config.load()
        assert config.http_protocol_class is HeadTimeoutProtocol
        assert config.ws_protocol_class is DenyingWebSocketProtocol


def test_uvicorn_server_startup_and_shutdown_take_the_sockets() -> None:
    assert issubclass(GatewayServer, uvicorn.Server)
    for name in ("startup", "shutdown"):
        with relied_on("uvicorn", f"Server.{name}(sockets=None), a coroutine", SERVER):
            method = getattr(uvicorn.Server, name)
            assert inspect.iscoroutinefunction(method)
            parameters = inspect.signature(method).parameters
            assert list(parameters) == ["self", "sockets"]
            assert parameters["sockets"].default is None


def test_aiohttp_read_timer_can_be_started_late_and_is_moved_by_each_chunk() -> None:
    async def silences() -> tuple[BaseException | None, BaseException | None]:
        handler = ResponseHandler(asyncio.get_running_loop())
        handler.read_timeout = 0.3
        handler.start_timeout()
        for _ in range(4):
            await asyncio.sleep(0.05)
            handler.data_received(b"x")
        while_flowing = handler.exception()
        await asyncio.sleep(0.6)
        return while_flowing, handler.exception()

    internal = "Connection.protocol, ResponseHandler.read_timeout (settable), start_timeout()"
    with relied_on("aiohttp", internal, ProviderClient.__module__):
        timeout = inspect.getattr_static(ResponseHandler, "read_timeout")
        assert isinstance(timeout, property) and timeout.fset is not None
        assert isinstance(inspect.getattr_static(Connection, "protocol"), property)
        while_flowing, after_silence = asyncio.run(silences())
        assert while_flowing is None
        assert isinstance(after_silence, TimeoutError)


def test_aiohttp_payload_subclass_keeps_its_value_and_size() -> None:
    internal = "Payload(value, content_type=...) keeping _value, _size and _autoclose"
    with relied_on("aiohttp", internal, JSONPieces.__module__):
        payload = JSONPieces([b'{"a":', b"1}"])
        assert getattr(payload, "autoclose", True) is True  # the property reads _autoclose
        assert payload._value == [b'{"a":', b"1}"]
        assert payload.size == 7
        assert payload.content_type == "application/json"
        assert payload.decode() == '{"a":1}'


def test_prometheus_metrics_take_the_value_class_at_creation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[str] = []

    class Recording(values.MutexValue):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(args[2])

    monkeypatch.setenv(MULTIPROCESS_ENV, str(tmp_path))
    monkeypatch.setattr(values, "ValueClass", values.ValueClass)
    internal = "values.ValueClass, read as each metric is made, and values.get_value_class()"
    with relied_on("prometheus-client", internal, share_between_processes.__module__):
        share_between_processes(str(tmp_path))
        assert values.ValueClass is not values.MutexValue
        monkeypatch.setattr(values, "ValueClass", Recording)
        Counter("checked", "A counter.", registry=CollectorRegistry()).inc()
        assert "checked_total" in made


def test_pydantic_instance_state_is_what_trusted_sets() -> None:
    fields = {name: None for name in StoredResponse.model_fields}
    internal = "BaseModel's instance state: __dict__ and the __pydantic_*__ slots"
    with relied_on("pydantic", internal, trusted.__module__):
        assert set(BaseModel.__slots__) == {
            "__dict__",
            "__pydantic_fields_set__",
            "__pydantic_extra__",
            "__pydantic_private__",
        }
        built = StoredResponse.model_construct(**fields)
        assert trusted(StoredResponse, dict(fields)).__getstate__() == built.__getstate__()


def test_pydantic_keeps_field_values_in_the_instance_dict() -> None:
    internal = "a model's __dict__ holding exactly its fields' values"
    with relied_on("pydantic", internal, SQLiteStore.__module__):
        snapshot = RequestSnapshot.model_validate({"model": "m", "input": "hi", "metadata": {}})
        assert snapshot.__dict__ == snapshot.model_dump()


def test_starlette_router_leaves_the_endpoint_in_the_scope() -> None:
    async def item(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    metrics = Metrics()
    routes = [Route("/items/{id}", item)]
    app = Starlette(
        routes=routes, middleware=[Middleware(ObserveMiddleware, metrics=metrics, routes=routes)]
    )
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": "/items/7", "raw_path": b"/items/7", "root_path": "",
        "query_string": b"", "headers": [], "client": ("127.0.0.1", 1), "state": {},
    }  # fmt: skip
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    internal = 'the router setting scope["endpoint"] in the scope middleware passed on'
    with relied_on("starlette", internal, ObserveMiddleware.__module__):
        asyncio.run(app(scope, receive, send))
        assert sent[0]["status"] == 200
        labels = {"route": "/items/{id}", "method": "GET", "status": "200"}
        assert metrics.registry.get_sample_value("gateway_requests_total", labels) == 1.0


def test_starlette_response_headers_come_from_init_headers() -> None:
    async def no_events() -> AsyncIterator[list[Any]]:
        return
        yield

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        raise AssertionError("an event stream does not read from the client")

    internal = "Response.init_headers(headers) making raw_headers, without Response.__init__"
    with relied_on("starlette", internal, EventStream.__module__):
        stream = EventStream(no_events())
        assert (b"content-type", b"text/event-stream; charset=utf-8") in stream.raw_headers
        assert b"content-length" not in dict(stream.raw_headers)
        assert stream.headers["cache-control"] == "no-cache"
        asyncio.run(stream({"type": "http"}, receive, send))
        assert sent[0]["headers"] == stream.raw_headers
        assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_logging_srcfile_switch_skips_find_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("tests.private_internals")
    monkeypatch.setattr(logger, "handle", records.append)
    logger.setLevel(logging.INFO)
    internal = "logging._srcfile (None skips findCaller)"
    python = platform.python_version()
    with relied_on("Python", internal, request_log.__name__, installed=python):
        assert hasattr(logging, "_srcfile")
        logger.info("found")
        monkeypatch.setattr(logging, "_srcfile", None)
        logger.info("skipped")
        assert records[0].lineno > 0
        assert records[1].lineno == 0
