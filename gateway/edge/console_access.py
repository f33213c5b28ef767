"""Who may look through the console, and the headers every console answer carries.

With ``auth.mode: none`` the console is open (the gateway listens on loopback only); with
``auth.mode: keys`` a key is sent as a Bearer header, or held in an HttpOnly, SameSite=Strict
cookie that the login endpoint sets. The cookie is read on ``GET`` requests only (and on
logout), so a page of another site cannot make the browser change anything with it. The
admin key sees every project; any other key sees its own project, and another project's
records answer as missing ones do.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import APIError
from .auth import MISSING_KEY, Authenticator, bearer_token, is_admin, unauthorized
from .routes.common import service

COOKIE = "gateway_console"
CONSOLE_PATHS = ("/console", "/v1/gateway/console")
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


@dataclass(frozen=True)
class Viewer:
    """Who looks: the admin (every project) or one project's key (that project only)."""

    admin: bool
    project: str | None  # None: every project
    key_id: str | None = None

    def scope(self, asked: str | None) -> str | None:
        """The project a request may read: the viewer's own, or for the admin the one asked
        for (``None``: every project)."""
        return asked if self.project is None else self.project


def _token(request: Request, *, cookie: bool) -> str | None:
    token = bearer_token(request.headers.get("authorization"))
    if token is None and cookie:
        token = request.cookies.get(COOKIE) or None
    return token


async def viewer_of_token(request: Request, token: str | None) -> Viewer:
    """The viewer a key names; a 401 for none or a wrong one."""
    settings = service(request).config.auth
    if settings.mode == "none":
        return Viewer(admin=True, project=None)
    if token is None:
        raise unauthorized(MISSING_KEY)
    if is_admin(settings, f"Bearer {token}"):
        return Viewer(admin=True, project=None)
    authenticator: Authenticator = request.app.state.authenticator
    caller = await authenticator.authenticate(f"Bearer {token}")
    return Viewer(admin=False, project=caller.project, key_id=caller.key_id)


async def viewer(request: Request) -> Viewer:
    """The viewer of a console request: by Bearer header, or by cookie on reads."""
    return await viewer_of_token(request, _token(request, cookie=request.method == "GET"))


def admin_only(who: Viewer) -> None:
    if not who.admin:
        raise APIError(
            403, "Only the admin key (auth.admin_key) may do this.", code="permission_denied"
        )


class ConsoleHeadersMiddleware:
    """Adds the Content-Security-Policy and its companions to every console answer,
    errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(CONSOLE_PATHS):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)
