"""``GET /v1/responses`` upgraded to a WebSocket: OpenAI's WebSocket mode.

The client sends ``{"type": "response.create", ...create parameters}`` frames; each is run
as a streamed turn and every event goes back as one JSON text frame, then the next frame
is read: one response at a time, in order. Errors are ``{"type": "error", ...}`` frames.
The connection remembers its latest response, so ``previous_response_id`` continues from it
even with ``store: false`` (the client then sends only the new items); a continuation that
fails makes it forget that response, which, unstored, can then no longer be continued. A
connection lasts at most 60 minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect

from session import Item, SessionError, normalise_input

from ...api.request_body import CreateResponseBody, check_create_body, validate_body
from ...api.response_object import response_object
from ...errors import APIError, invalid_request
from ...turn.events import TERMINAL_EVENTS
from ...turn.lifecycle import CONTINUABLE, finished, save_finished, save_started
from ...turn.service import ResponsesService
from ...upstream import TurnResult, UnsupportedInput, UpstreamError
from ..auth import Caller
from ..errors import from_session_error, from_upstream_error
from .common import DEFAULT_PROJECT

CONNECTION_SECONDS = 3600.0
ROUTE = "/v1/responses"
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
        self.project: str = websocket.scope.get("state", {}).get("project", DEFAULT_PROJECT)
        self.deadline = time.monotonic() + CONNECTION_SECONDS
        self.last: LastResponse | None = None
        self.caller: Caller | None = websocket.scope.get("state", {}).get("caller")
        self.requests = websocket.app.state.metrics.requests

    async def serve(self) -> None:
        await self.websocket.accept()
        # A client that leaves mid-turn ends only the relay: the turn finishes and is stored.
        with contextlib.suppress(WebSocketDisconnect):
            await self._serve_frames()

    async def _serve_frames(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.deadline - time.monotonic()):
                    raw = await self._receive()
            except TimeoutError:
                await self._send(error_frame(_connection_limit()))
                await self.websocket.close(1000)
                return
            status = 200
            try:
                await self._handle(raw)
            except (APIError, SessionError, UpstreamError, UnsupportedInput) as error:
                failure = _api_error(error)
                status = failure.status
                await self._send(error_frame(failure))
            self.requests.labels(ROUTE, "WEBSOCKET", str(status)).inc()

    async def _receive(self) -> str | bytes:
        message = await self.websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text: str | None = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def _send(self, frame: dict[str, Any] | bytes) -> None:
        data = frame if isinstance(frame, bytes) else orjson.dumps(frame)
        await self.websocket.send_text(data.decode())

    async def _handle(self, raw: str | bytes) -> None:
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise invalid_request("A frame is not valid JSON.", code="invalid_json") from None
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "response.processed":
            return  # Codex acknowledges each response; nothing to do
        if kind != "response.create":
            raise invalid_request(
                f"Unknown event type {kind!r}: send 'response.create'.",
                param="type",
                code="invalid_value",
            )
        history = self._continued(message.get("previous_response_id"))
        if self.caller is not None:
            await self.websocket.app.state.authenticator.acquire(self.caller)
        fields = {key: value for key, value in message.items() if key not in _SOCKET_FIELDS}
        body = check_create_body(
            validate_body(CreateResponseBody, orjson.dumps({**fields, "stream": True}))
        )
        if message.get("generate") is False:
            await self._prepare(body, history)
            return
        lane = message.get("stream_id")
        await self._stream(body, history, lane if isinstance(lane, str) else None)

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


def _connection_limit() -> APIError:
    return APIError(
        400,
        "Responses websocket connection limit reached (60 minutes). "
        "Create a new websocket connection to continue.",
        code="websocket_connection_limit_reached",
    )


async def responses_socket(websocket: WebSocket) -> None:
    await ResponsesSocket(websocket, websocket.app.state.service).serve()
