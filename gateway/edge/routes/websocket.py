"""``GET /v1/responses`` upgraded to a WebSocket: OpenAI's WebSocket mode.

The client sends ``{"type": "response.create", ...create parameters}`` frames; each is run
as a streamed turn and every event goes back as one JSON text frame. A frame without a
``stream_id`` is served before the next frame is read: one response at a time, in order.
Frames with a ``stream_id`` go to that lane (see :mod:`gateway.edge.socket_lanes`): lanes run
side by side, each in order, and every event of a lane's response carries its ``stream_id``.
Errors are ``{"type": "error", "status", "error": {...}}`` frames. Each lane remembers its
latest response, so ``previous_response_id`` continues from it even with ``store: false``
(the client then sends only the new items); a continuation that fails makes the lane forget
that response, which, unstored, can then no longer be continued. A connection lasts
``server.websocket_connection_seconds`` (OpenAI's 60 minutes), and is closed once idle
``server.websocket_idle_seconds``; at its end the responses running finish and the frames
still waiting are refused.

With API keys, each turn checks the key again as an HTTP request would (through the same
lookup cache, so a revocation reaches an open socket within ``auth.cache_seconds``): a key
that is gone gets its 401 as an error frame and the socket is closed (1008). Each turn has
an access log line of its own, carrying the socket's request id.
"""

from __future__ import annotations

import asyncio
import logging
import time
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
from ..middleware.api_keys import refuse
from ..socket_errors import MAX_QUEUED, api_error, connection_limit, error_frame, idle, queue_full
from ..socket_lanes import Lane, Lanes, LastResponse
from ..socket_limits import OpenSockets
from .common import DEFAULT_PROJECT

access_logger = logging.getLogger("gateway.access")  # the HTTP requests' lines go there too

ROUTE = "/v1/responses"
METHOD = "WEBSOCKET"  # a turn's method in its access line and metrics
KEY_GONE = 1008  # the close code once the key is revoked: policy violation
FIRST = asyncio.FIRST_COMPLETED
NOT_JSON = object()  # a frame that did not parse
# Controls of WebSocket mode itself, never part of the request a model sees.
_SOCKET_FIELDS = ("type", "generate", "stream_id", "client_metadata")
# The ends of a response that a later one may continue from.
_CONTINUABLE_ENDS = frozenset(TERMINAL_EVENTS[status] for status in CONTINUABLE)


class ResponsesSocket:
    """One client connection: its project, its deadline and its lanes."""

    def __init__(self, websocket: WebSocket, service: ResponsesService) -> None:
        self.websocket = websocket
        self.service = service
        settings = service.config.server
        state = websocket.scope.get("state", {})
        self.project: str = state.get("project", DEFAULT_PROJECT)
        self.lifetime = settings.websocket_connection_seconds
        self.deadline = time.monotonic() + self.lifetime
        self.idle_seconds = settings.websocket_idle_seconds
        self.touched = time.monotonic()  # the last frame read or response finished
        self.lanes = Lanes(settings.websocket_max_streams)
        self.in_flight = asyncio.Semaphore(settings.websocket_max_in_flight)
        self.changed = asyncio.Event()  # a lane finished, or the key is gone
        self.sending = asyncio.Lock()  # one frame at a time, whichever lane sends it
        self.caller: Caller | None = state.get("caller")
        self.key_gone: APIError | None = None
        self.gone = False  # the client left: nothing more is sent
        self.socket_log = CURRENT_REQUEST.get() or RequestLog(request_id_of(None))
        self.client = (websocket.scope.get("client") or ("-",))[0]
        self.metrics = websocket.app.state.metrics

    async def serve(self) -> None:
        await self.websocket.accept()
        # A client that leaves mid-turn ends only the relay: the turn finishes and is stored.
        try:
            await self._serve_frames()
        except WebSocketDisconnect:
            self.gone = True
        finally:
            self.lanes.drop_queued()
            await asyncio.gather(*self.lanes.workers())

    async def _serve_frames(self) -> None:
        receiving: asyncio.Task[str | bytes] | None = None
        try:
            while True:
                if receiving is None:
                    receiving = asyncio.ensure_future(self._receive())
                ending = await self._wait(receiving)
                if ending is not None:
                    await self._end(*ending)
                    return
                if not receiving.done():
                    continue
                raw, receiving = receiving.result(), None
                self.touched = time.monotonic()
                await self._dispatch(raw)
                if self.key_gone is not None:
                    await self._end(None, KEY_GONE)
                    return
        finally:
            if receiving is not None:
                receiving.cancel()

    async def _wait(
        self, receiving: asyncio.Future[str | bytes]
    ) -> tuple[APIError | None, int] | None:
        """Wait for a frame or a change of the lanes; why the connection ends, if it does."""
        now = time.monotonic()
        left = self.deadline - now
        if left <= 0:
            return connection_limit(self.lifetime), 1000
        idle_left = self.touched + self.idle_seconds - now
        if not self.lanes.busy and idle_left <= 0:
            return idle(self.idle_seconds), 1000
        if self.key_gone is not None:
            return None, KEY_GONE
        self.changed.clear()
        changed = asyncio.ensure_future(self.changed.wait())
        timeout = left if self.lanes.busy else min(left, idle_left)
        waited: set[asyncio.Future[Any]] = {receiving, changed}
        try:
            await asyncio.wait(waited, timeout=timeout, return_when=FIRST)
        finally:
            changed.cancel()
        return None

    async def _end(self, error: APIError | None, code: int) -> None:
        """Finish the responses running, refuse those waiting, tell the client, close."""
        refusal = error or self.key_gone
        for lane, _ in self.lanes.drop_queued():
            if refusal is not None:
                await self._send(error_frame(refusal, lane.name))
        await asyncio.gather(*self.lanes.workers())
        if error is not None:
            await self._send(error_frame(error))
        await self.websocket.close(code, None if code == 1000 else "invalid_api_key")

    async def _dispatch(self, raw: str | bytes) -> None:
        """Serve the unnamed lane's frame now; queue a named lane's frame in its lane."""
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            message = NOT_JSON  # refused as it is served
        name = message.get("stream_id") if isinstance(message, dict) else None
        if name is None or message.get("type") != "response.create":
            async with self.in_flight:
                await self._serve(message, self.lanes.unnamed)
            return
        try:
            if not isinstance(name, str) or not name:
                raise invalid_request(
                    "stream_id must be a non-empty string.", param="stream_id", code="invalid_type"
                )
            lane = self.lanes.named(name)
            if len(lane.queue) >= MAX_QUEUED:
                raise queue_full(name)
        except APIError as error:
            await self._send(error_frame(error, name if isinstance(name, str) else None))
            return
        lane.queue.append(message)
        if lane.worker is None:
            lane.worker = asyncio.create_task(self._run_lane(lane))

    async def _run_lane(self, lane: Lane) -> None:
        """Serve a named lane's frames in order, each once a place in flight is free."""
        try:
            while lane.queue and not self.gone and self.key_gone is None:
                message = lane.queue.popleft()
                async with self.in_flight:
                    await self._serve(message, lane)
        except WebSocketDisconnect:
            self.gone = True
        finally:
            lane.worker = None
            self.touched = time.monotonic()
            self.changed.set()

    async def _serve(self, message: object, lane: Lane) -> None:
        """One frame as one turn: its access line and metrics, its error as a frame."""
        started = time.perf_counter()
        log = RequestLog(
            self.socket_log.request_id, project=self.project, key_id=self.socket_log.key_id
        )
        token = CURRENT_REQUEST.set(log)  # the turn's task copies it: its figures land here
        status: int | None = 200
        try:
            status = await self._handle(message, log, lane)
        except (APIError, SessionError, UpstreamError, UnsupportedInput) as error:
            failure = api_error(error)
            status = failure.status
            await self._send(error_frame(failure, lane.name))
        finally:
            CURRENT_REQUEST.reset(token)
        if status is not None:
            self._observe(status, time.perf_counter() - started, log)

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
        if self.gone:
            return
        data = frame if isinstance(frame, bytes) else orjson.dumps(frame)
        async with self.sending:
            await self.websocket.send_text(data.decode())

    async def _handle(self, message: object, log: RequestLog, lane: Lane) -> int | None:
        """Serve one frame: its status (``None`` for an acknowledgement, not a turn)."""
        if message is NOT_JSON:
            raise invalid_request("A frame is not valid JSON.", code="invalid_json")
        if not isinstance(message, dict):
            message = {}
        kind = message.get("type")
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
        history = self.lanes.continued(lane, message.get("previous_response_id"))
        if self.caller is not None:
            await self._admit()
        fields = {key: value for key, value in message.items() if key not in _SOCKET_FIELDS}
        body = check_create_body(
            validate_body(CreateResponseBody, orjson.dumps({**fields, "stream": True}))
        )
        if message.get("generate") is False:
            await self._prepare(body, history, lane)
            return 200
        await self._stream(body, history, lane)
        return 200

    async def _admit(self) -> None:
        """Check the key again, as for an HTTP request: revoked, over its rate or budget."""
        authorization = self.websocket.headers.get("authorization")
        try:
            self.caller = await self.websocket.app.state.authenticator.admit(authorization)
        except APIError as error:
            if error.status == 401:
                self.key_gone = error
                self.changed.set()
            raise

    async def _stream(
        self, body: CreateResponseBody, history: list[Item] | None, lane: Lane
    ) -> None:
        """Run the turn, relay its events, remember it in its lane for the next one."""
        if history is None and body.conversation_id is None:  # a conversation's turn reads
            history = await self.service.history(body, self.project)  # it under its lock
        stream = await self.service.stream(body, self.project, history)
        name = lane.name
        lane_field = None if name is None else b',"stream_id":' + orjson.dumps(name) + b"}"
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
            lane.last = LastResponse(final["id"], items)

    async def _prepare(
        self, body: CreateResponseBody, history: list[Item] | None, lane: Lane
    ) -> None:
        """``generate: false``: a response that only holds its input, for later turns."""
        if history is None:
            history = await self.service.history(body, self.project)
        async with self.service.turn(body, self.project, history) as turn:
            await save_started(self.service.store, turn)
            record = finished(turn.record, TurnResult(status="completed"))
            await save_finished(self.service.store, turn, record, started=True)
        started = response_object(turn.record, store=body.store)
        done = response_object(record, store=body.store)
        lane_member = {} if lane.name is None else {"stream_id": lane.name}
        for number, event in enumerate(
            [
                {"type": "response.created", "response": started},
                {"type": "response.in_progress", "response": started},
                {"type": "response.completed", "response": done},
            ]
        ):
            await self._send({**event, "sequence_number": number, **lane_member})
        lane.last = LastResponse(record.id, [*history, *record.request.input])


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
