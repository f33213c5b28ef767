"""Responses the gateway sends: JSON encoded with orjson, and server-sent events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.responses import JSONResponse as _StarletteJSONResponse
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..turn.events import StreamEvent

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class JSONResponse(_StarletteJSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)  # several times faster than the standard library


def sse(events: list[StreamEvent]) -> bytes:
    """``events`` framed as server-sent events, in one piece."""
    return b"".join(
        b"event: %s\ndata: %s\n\n" % (event.type.encode(), event.data) for event in events
    )


class EventStream(Response):
    """A turn's events as server-sent events, sent as they come, to the end, with no task
    watching for the client.

    The turn runs in a task of its own and ends by itself; a client that has gone away
    only makes the server drop what is sent (the ASGI 2.4 behaviour), so nothing here
    needs to listen for the disconnect, nor the task group that would cost every stream.
    """

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[list[StreamEvent]]) -> None:
        # No body and so no content-length: the stream's end is the connection's.
        self.status_code = 200
        self.background = None
        self._events = events
        self.init_headers(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(start)
        ended = False
        async for events in self._events:
            if ended:
                continue  # nothing follows a terminal event; the turn's task ends by itself
            # A stream's terminal event is its last: it ends the body in the same message.
            ended = events[-1].terminal
            await send({"type": "http.response.body", "body": sse(events), "more_body": not ended})
        if not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
