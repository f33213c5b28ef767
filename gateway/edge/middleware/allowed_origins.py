"""Refuse WebSocket upgrades that a web page of another site asks for, with HTTP 403.

A browser lets any page open a WebSocket to any address, a loopback gateway's included,
and sends no preflight; it names the page's site in ``Origin``. Such a socket could spend
the gateway's upstream keys, so an ``Origin`` must be the gateway's own (the scheme and
``Host`` it was reached at) or listed in ``server.allowed_origins``. Clients that are not
browsers (SDKs, Codex) send no ``Origin`` and are let through.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from .api_keys import refuse

_DEFAULT_PORTS = {"http": ":80", "ws": ":80", "https": ":443", "wss": ":443"}


def _origin(scheme: str, netloc: str) -> str:
    """``scheme://netloc`` in lower case, without the scheme's default port."""
    scheme, netloc = scheme.lower(), netloc.lower()
    return f"{scheme}://{netloc.removesuffix(_DEFAULT_PORTS.get(scheme, ''))}"


def _normal(origin: str) -> str:
    scheme, separator, netloc = origin.strip().rstrip("/").partition("://")
    return _origin(scheme, netloc) if separator else origin.strip().lower()


class AllowedOriginsMiddleware:
    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.any = "*" in allowed
        self.allowed = frozenset(_normal(origin) for origin in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.any or scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        origin = host = None
        for key, value in scope["headers"]:
            if key == b"origin":
                origin = value.decode("latin-1")
            elif key == b"host":
                host = value.decode("latin-1")
        if origin is None or self._allowed(_normal(origin), host):
            await self.app(scope, receive, send)
            return
        error = APIError(
            403,
            f"The Origin {origin!r} may not open a WebSocket to this gateway: only its own "
            "and those in server.allowed_origins may.",
            code="invalid_origin",
        )
        await refuse(scope, receive, send, error)

    def _allowed(self, origin: str, host: str | None) -> bool:
        if origin in self.allowed:
            return True
        scheme = origin.partition("://")[0]
        return host is not None and scheme in ("http", "https") and origin == _origin(scheme, host)
