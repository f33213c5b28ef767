"""With ``auth.mode: keys``, every ``/v1`` request names its project with an API key."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from session import SessionError

from ..auth import Authenticator
from ..errors import APIError, from_session_error


class APIKeyMiddleware:
    """Authenticates and rate-limits ``/v1`` requests; sets ``state["project"]``.

    The :class:`Authenticator` needs the store, so it is made in the app's lifespan and
    kept as ``app.state.authenticator``.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or not (
            path.startswith("/v1/") or path == "/v1"
        ):
            await self.app(scope, receive, send)
            return
        authorization = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        authenticator: Authenticator = scope["app"].state.authenticator
        try:
            caller = await authenticator.admit(authorization)
        except APIError as error:
            await error.response()(scope, receive, send)
            return
        except SessionError as error:
            await from_session_error(error).response()(scope, receive, send)
            return
        scope.setdefault("state", {})["project"] = caller.project
        await self.app(scope, receive, send)
