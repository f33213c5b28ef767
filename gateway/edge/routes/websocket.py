"""``GET /v1/responses`` upgraded to a WebSocket: OpenAI's WebSocket mode.

The client sends ``{"type": "response.create", ...create parameters}`` frames; each is run
as a streamed turn and every event goes back as one JSON text frame, then the next frame
is read: one response at a time, in order. Errors are ``{"type": "error", ...}`` frames.
The connection remembers its latest response, so ``previous_response_id`` continues from it
even with ``store: false`` (the client then sends only the new items); a continuation that
fails makes it forget that response, which, unstored, can then no longer be continued. A
connection lasts at most 60 minutes, and is closed once idle ``server.websocket_idle_seconds``.

With API keys, each turn checks the key again as an HTTP request would (through the same
lookup cache, so a revocation reaches an open socket within ``auth.cache_seconds``): a key
that is gone gets its 401 as an error frame and the socket is closed (1008). Each turn has
an access log line of its own, carrying the socket's request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect

from session import Item, SessionError, normalise_input

from ...api.request_body import CreateResponseBody, check_create_body, validate_body
from ...api.response_object import response_object
from ...errors import APIError, invalid_request
from ...observability.request_log import CURRENT_REQUEST, AccessLine, RequestLog, request_id_of
from ...turn.events import TERMINAL_EVENTS
from ...turn.lifecycle import CONTINUABLE, finished, save_finished, save_started
from ...turn.service import ResponsesService
from ...upstream import TurnResult, UnsupportedInput, UpstreamError
from ..auth import Caller
from ..errors import from_session_error, from_upstream_error
from ..middleware.api_keys import refuse
from ..socket_limits import OpenSockets
from .common import DEFAULT_PROJECT

access_logger = logging.getLogger("gateway.access")  # the HTTP requests' lines go there too

CONNECTION_SECONDS = 3600.0
ROUTE = "/v1/responses"
METHOD = "WEBSOCKET"  # a turn's method in its access line and metrics
KEY_GONE = 1008  # the close code once the key is revoked: policy violation
# Controls of WebSocket mode itself, never part of the request a model sees.
_SOCKET_FIELDS = ("type", "generate", "stream_id", "client_metadata")
# The ends of a response that a later one may continue from.
_CONTINUABLE_ENDS = frozenset(TERMINAL_EVENTS[status] for status in CONTINUABLE)


@dataclass
class LastResponse:
    """The connection's latest response and the whole context that led to it."""

    id: str
    items: list[Item]


def error_frame(error: APIError) -> dict[str, Any]:
    return {"type": "error", "status": error.status, **error.body()}


class ResponsesSocket:
    """One client connection: its project, its deadline and its latest response."""

    def __init__(self, websocket: WebSocket, service: ResponsesService) -> None:
        self.websocket = websocket
        self.service = service
        state = websocket.scope.get("state", {})
        self.project: str = state.get("project", DEFAULT_PROJECT)
        self.deadline = time.monotonic() + CONNECTION_SECONDS
        self.idle_seconds = service.config.server.websocket_idle_seconds
        self.last: LastResponse | None = None
        self.caller: Caller | None = state.get("caller")
        self.key_gone = False
        self.socket_log = CURRENT_REQUEST.get() or RequestLog(request_id_of(None))
        self.client = (websocket.scope.get("client") or ("-",))[0]
        self.metrics = websocket.app.state.metrics

    async def serve(self) -> None:
        await self.websocket.accept()
        # A client that leaves mid-turn ends only the relay: the turn finishes and is stored.
        with contextlib.suppress(WebSocketDisconnect):
            await self._serve_frames()

    async def _serve_frames(self) -> None:
        while True:
            left = self.deadline - time.monotonic()
            try:
                async with asyncio.timeout(min(left, self.idle_seconds)):
                    raw = await self._receive()
            except TimeoutError:
                idle = self.idle_seconds < left
                ending = _idle(self.idle_seconds) if idle else _connection_limit()
                await self._send(error_frame(ending))
                await self.websocket.close(1000)
                return
            started = time.perf_counter()
            log = RequestLog(
                self.socket_log.request_id, project=self.project, key_id=self.socket_log.key_id
            )
            token = CURRENT_REQUEST.set(log)  # the turn's task copies it: its figures land here
            status: int | None = 200
            try:
                status = await self._handle(raw, log)
            except (APIError, SessionError, UpstreamError, UnsupportedInput) as error:
                failure = _api_error(error)
                status = failure.status
                await self._send(error_frame(failure))
            finally:
                CURRENT_REQUEST.reset(token)
            if status is not None:
                self._observe(status, time.perf_counter() - started, log)
            if self.key_gone:
                await self.websocket.close(KEY_GONE, "invalid_api_key")
                return

    def _observe(self, status: int, seconds: float, log: RequestLog) -> None:
        """The turn's metrics and access line, as an HTTP request's."""
        self.metrics.requests.labels(ROUTE, METHOD, str(status)).inc()
        self.metrics.request_seconds.labels(ROUTE, METHOD).observe(seconds)
        if access_logger.isEnabledFor(logging.INFO):
            token = CURRENT_REQUEST.set(log)  # the line's request id: the socket's
            access_logger.info(AccessLine(self.client, METHOD, ROUTE, status, seconds, log))
            CURRENT_REQUEST.reset(token)

    async def _receive(self) -> str | bytes:
        message = await self.websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text: str | None = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def _send(self, frame: dict[str, Any] | bytes) -> None:
        data = frame if isinstance(frame, bytes) else orjson.dumps(frame)
        await self.websocket.send_text(data.decode())

    async def _handle(self, raw: str | bytes, log: RequestLog) -> int | None:
        """Serve one frame: its status (``None`` for an acknowledgement, not a turn)."""
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise invalid_request("A frame is not valid JSON.", code="invalid_json") from None
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "response.processed":
            return None  # Codex acknowledges each response; nothing to do
        if kind != "response.create":
            raise invalid_request(
                f"Unknown event type {kind!r}: send 'response.create'.",
                param="type",
                code="invalid_value",
            )
        model = message.get("model")
        log.model = model if isinstance(model, str) else None  # a failed turn's line names it
        history = self._continued(message.get("previous_response_id"))
        if self.caller is not None:
            await self._admit()
        fields = {key: value for key, value in message.items() if key not in _SOCKET_FIELDS}
        body = check_create_body(
            validate_body(CreateResponseBody, orjson.dumps({**fields, "stream": True}))
        )
        if message.get("generate") is False:
            await self._prepare(body, history)
            return 200
        lane = message.get("stream_id")
        await self._stream(body, history, lane if isinstance(lane, str) else None)
        return 200

    async def _admit(self) -> None:
        """Check the key again, as for an HTTP request: revoked, over its rate or budget."""
        authorization = self.websocket.headers.get("authorization")
        try:
            self.caller = await self.websocket.app.state.authenticator.admit(authorization)
        except APIError as error:
            self.key_gone = error.status == 401
            raise

    def _continued(self, previous_response_id: object) -> list[Item] | None:
        """The remembered context a continuation names, forgotten from here on.

        A continuation that fails in any way (a 4xx or 5xx error, a ``response.failed``)
        must leave nothing to continue from on this connection; one that succeeds is
        remembered in its place.
        """
        if self.last is None or previous_response_id != self.last.id:
            return None
        items, self.last = self.last.items, None
        return items

    async def _stream(
        self, body: CreateResponseBody, history: list[Item] | None, lane: str | None = None
    ) -> None:
        """Run the turn, relay its events, remember it for the next one."""
        if history is None and body.conversation_id is None:  # a conversation's turn reads
            history = await self.service.history(body, self.project)  # it under its lock
        stream = await self.service.stream(body, self.project, history)
        lane_field = None if lane is None else b',"stream_id":' + orjson.dumps(lane) + b"}"
        final: dict[str, Any] | None = None
        async for events in stream:
            for event in events:
                data = event.data
                if lane_field is not None:  # the client's lane, on every event of the response
                    data = data[:-1] + lane_field  # the JSON object, one member longer
                await self._send(data)
                if event.type in _CONTINUABLE_ENDS:
                    final = orjson.loads(event.data)["response"]
        if final is not None and history is not None:
            items = [*history, *normalise_input(body.input), *final["output"]]
            self.last = LastResponse(final["id"], items)

    async def _prepare(self, body: CreateResponseBody, history: list[Item] | None) -> None:
        """``generate: false``: a response that only holds its input, for later turns."""
        if history is None:
            history = await self.service.history(body, self.project)
        async with self.service.turn(body, self.project, history) as turn:
            await save_started(self.service.store, turn)
            record = finished(turn.record, TurnResult(status="completed"))
            await save_finished(self.service.store, turn, record, started=True)
        started = response_object(turn.record, store=body.store)
        done = response_object(record, store=body.store)
        for number, event in enumerate(
            [
                {"type": "response.created", "response": started},
                {"type": "response.in_progress", "response": started},
                {"type": "response.completed", "response": done},
            ]
        ):
            await self._send({**event, "sequence_number": number})
        self.last = LastResponse(record.id, [*history, *record.request.input])


def _api_error(error: Exception) -> APIError:
    if isinstance(error, APIError):
        return error
    if isinstance(error, SessionError):
        return from_session_error(error)
    assert isinstance(error, UpstreamError | UnsupportedInput)
    return from_upstream_error(error)


def _idle(seconds: float) -> APIError:
    return APIError(
        400,
        f"The WebSocket received no frame in {seconds:g} s (server.websocket_idle_seconds) "
        "and was closed. Open a new one to continue.",
        code="websocket_idle_timeout",
    )


def _connection_limit() -> APIError:
    return APIError(
        400,
        "Responses websocket connection limit reached (60 minutes). "
        "Create a new websocket connection to continue.",
        code="websocket_connection_limit_reached",
    )


async def responses_socket(websocket: WebSocket) -> None:
    """Serve one socket, if its key, its project and the process have room for it."""
    sockets: OpenSockets = websocket.app.state.sockets
    caller: Caller | None = websocket.scope.get("state", {}).get("caller")
    project, key_id = (None, None) if caller is None else (caller.project, caller.key_id)
    try:
        sockets.open(project, key_id)
    except APIError as error:
        await refuse(websocket.scope, websocket.receive, websocket.send, error)
        return
    try:
        await ResponsesSocket(websocket, websocket.app.state.service).serve()
    finally:
        sockets.close(project, key_id)
