"""With ``auth.mode: keys``, every ``/v1`` request names its project with an API key."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from session import SessionError

from ...errors import APIError
from ...observability.request_log import CURRENT_REQUEST
from ..auth import Authenticator
from ..errors import error_response, from_session_error
from ..messages_errors import anthropic_error_response, speaks_messages


class APIKeyMiddleware:
    """Authenticates and rate-limits ``/v1`` requests; sets ``state["project"]``.

    The :class:`Authenticator` needs the store, so it is made in the app's lifespan and
    kept as ``app.state.authenticator``.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if (
            scope["type"] not in ("http", "websocket")
            or not (path.startswith("/v1/") or path == "/v1")
            or path.startswith("/v1/gateway/")  # the operator's: they check the admin key
        ):
            await self.app(scope, receive, send)
            return
        authorization = None
        api_key = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value.decode("latin-1")
            elif name == b"x-api-key":
                api_key = value.decode("latin-1").strip()
        if authorization is None and api_key and _takes_api_key_header(path):
            authorization = f"Bearer {api_key}"  # how Anthropic's clients send their key
        authenticator: Authenticator = scope["app"].state.authenticator
        try:
            caller = await authenticator.admit(authorization)
        except APIError as error:
            await refuse(scope, receive, send, error)
            return
        except SessionError as error:
            await refuse(scope, receive, send, from_session_error(error))
            return
        state = scope.setdefault("state", {})
        state["project"] = caller.project
        state["caller"] = caller  # a WebSocket takes a request from its limit per response
        log = CURRENT_REQUEST.get()
        if log is not None:  # the key that made a turn is stored with it
            log.key_id = caller.key_id
        await self.app(scope, receive, send)


def _takes_api_key_header(path: str) -> bool:
    """The routes Anthropic's clients call, with their key in ``x-api-key``."""
    return speaks_messages(path) or path == "/v1/models" or path.startswith("/v1/models/")


async def refuse(scope: Scope, receive: Receive, send: Send, error: APIError) -> None:
    """The error as an HTTP answer, to a WebSocket upgrade too where the server can (in
    Anthropic's shape on the Messages API's routes)."""
    if scope["type"] == "http":
        answer = anthropic_error_response if speaks_messages(scope["path"]) else error_response
        await answer(error)(scope, receive, send)
    elif "websocket.http.response" in scope.get("extensions", {}):
        await WebSocket(scope, receive, send).send_denial_response(error_response(error))
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": error.message[:100]})
