"""What the routes' exception handlers leave: a client that hung up, and exceptions no
handler expects.

A client that hangs up before its whole body arrived is no failure: the answer nobody
hears says 499 (as nginx has it), which is what its access line and ``/metrics`` count,
and nothing else is logged. Once an answer has started, a hang-up just ends it.

An unexpected exception is one ERROR line with its traceback and a 500 in OpenAI's shape.
Starlette answers such an exception and raises it again for the server to log, so each
was logged twice, the server's line without the request's id; here it is logged once,
while the request's id is current, and goes no further. One raised once the answer has
started cannot be answered any more: it goes on to the server, which logs it (once) and
cuts the connection.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...errors import APIError, server_error
from ..errors import error_response

logger = logging.getLogger("gateway")

CLIENT_CLOSED_REQUEST = 499


class UncaughtMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except ClientDisconnect:
            if not started:
                message = "The client closed the connection before its request was complete."
                gone = APIError(CLIENT_CLOSED_REQUEST, message, code="client_closed_request")
                await error_response(gone)(scope, receive, send)
        except Exception:
            if started:
                raise
            logger.exception("unhandled error on %s %s", scope["method"], scope["path"])
            error = server_error(500, "The gateway failed to process the request.", "server_error")
            await error_response(error)(scope, receive, send)
