"""Refuse requests whose ``Host`` is not one of the gateway's names.

A web page can make a browser send requests to a loopback gateway, and DNS rebinding can
make such a page's own name resolve to 127.0.0.1; the ``Host`` header still carries the
page's name, so checking it stops both.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from ..errors import error_response


def _host_name(header: str) -> str:
    if header.startswith("["):  # [::1]:8080
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class AllowedHostsMiddleware:
    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.any = "*" in allowed
        self.allowed = frozenset(name.lower() for name in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.any or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = ""
        for key, value in scope["headers"]:
            if key == b"host":
                host = value.decode("latin-1").lower()
                break
        if _host_name(host) in self.allowed:
            await self.app(scope, receive, send)
            return
        error = APIError(
            400,
            f"The Host header {host!r} is not an allowed name for this gateway "
            "(server.allowed_hosts).",
            code="invalid_host",
        )
        await error_response(error)(scope, receive, send)
