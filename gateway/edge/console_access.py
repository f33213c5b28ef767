"""Who may look through the console, and the headers every console answer carries.

With ``auth.mode: none`` the console is open (the gateway listens on loopback only); with
``auth.mode: keys`` a key is sent as a Bearer header, or the login endpoint checks it once and
sets an HttpOnly, SameSite=Strict cookie holding a session (:mod:`.console_sessions`), never
the key. The cookie is read on ``GET`` requests only (and on logout), so a page of another
site cannot make the browser change anything with it. The admin key sees every project; any
other key sees its own project, and another project's records answer as missing ones do.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from session import hash_secret

from ..errors import APIError
from .auth import MISSING_KEY, Authenticator, bearer_token, unauthorized
from .console_sessions import ConsoleSessions
from .routes.common import service

COOKIE = "gateway_console"
SESSION_OVER = (
    "Your console session has ended (logged out, expired or its key revoked); log in again."
)
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


async def viewer_of_digest(request: Request, digest: str) -> Viewer:
    """The viewer the key with SHA-256 ``digest`` names; a 401 for an unknown or revoked one."""
    settings = service(request).config.auth
    if settings.admin_key is not None and hmac.compare_digest(
        digest, hash_secret(settings.admin_key)
    ):
        return Viewer(admin=True, project=None)
    authenticator: Authenticator = request.app.state.authenticator
    caller = await authenticator.authenticate_digest(digest)
    return Viewer(admin=False, project=caller.project, key_id=caller.key_id)


async def viewer_of_token(request: Request, token: str | None) -> Viewer:
    """The viewer a key names; a 401 for none or a wrong one."""
    if service(request).config.auth.mode == "none":
        return Viewer(admin=True, project=None)
    if token is None:
        raise unauthorized(MISSING_KEY)
    return await viewer_of_digest(request, hash_secret(token))


def sessions(request: Request) -> ConsoleSessions:
    found: ConsoleSessions = request.app.state.console_sessions
    return found


async def viewer(request: Request) -> Viewer:
    """The viewer of a console request: by Bearer header, or by session cookie on reads."""
    token = bearer_token(request.headers.get("authorization"))
    cookie = request.cookies.get(COOKIE) if request.method == "GET" else None
    if token is not None or not cookie or service(request).config.auth.mode == "none":
        return await viewer_of_token(request, token)
    session = await sessions(request).open(cookie)
    if session is None:
        raise unauthorized(SESSION_OVER)
    return await viewer_of_digest(request, session.key_digest)


async def visible_projects(request: Request, who: Viewer) -> list[str]:
    """The projects the viewer may look into: its own, or for the admin every one stored."""
    if who.project is not None:
        return [who.project]
    found: list[str] = await service(request).store.projects()
    return found


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
