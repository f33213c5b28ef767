"""Refuse what a web page of another site makes a browser send: WebSocket upgrades, and
requests that change state (any method but ``GET``, ``HEAD`` and ``OPTIONS``), with 403.

A browser lets any page open a WebSocket to any address, a loopback gateway's included,
and sends no preflight; it also sends a page's ``POST``, ``PUT``, ``PATCH`` and ``DELETE``
without one when the page asks for an opaque answer (``mode: "no-cors"``), body or none.
The page never reads the answer, but the request runs: it could empty a conversation,
cancel a turn or spend the gateway's upstream keys. The browser names the page's site in
``Origin``, which must be the gateway's own (the ``Host`` it was reached at, over http or
https) or listed in ``server.allowed_origins``. Without an ``Origin``, a browser's
``Sec-Fetch-Site`` of ``cross-site`` or ``same-site`` is refused too; its ``same-origin``
is believed, since no page can make the browser say it (a proxy that changes ``Host``
then does not matter). Clients that are not browsers (SDKs, Codex, curl) send neither
header and are let through.

With ``auth.mode: keys`` a request that carries an ``Authorization`` header is let
through whatever its origin: the key it holds is checked next, and a page cannot make a
browser send that header to another origin without the gateway's consent (CORS), which it
never gives. The console's cookie is a browser's credential, sent by the browser itself:
a request riding it is refused like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from .api_keys import refuse

_DEFAULT_PORTS = {"http": ":80", "ws": ":80", "https": ":443", "wss": ":443"}
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_OTHER_SITES = frozenset({"cross-site", "same-site"})


def _origin(scheme: str, netloc: str) -> str:
    """``scheme://netloc`` in lower case, without the scheme's default port."""
    scheme, netloc = scheme.lower(), netloc.lower()
    return f"{scheme}://{netloc.removesuffix(_DEFAULT_PORTS.get(scheme, ''))}"


def _normal(origin: str) -> str:
    scheme, separator, netloc = origin.strip().rstrip("/").partition("://")
    return _origin(scheme, netloc) if separator else origin.strip().lower()


class AllowedOriginsMiddleware:
    """``allowed``: ``server.allowed_origins`` (``"*"`` lets any through);
    ``keys``: whether ``auth.mode`` is ``keys``, so an ``Authorization`` header is a key."""

    def __init__(self, app: ASGIApp, allowed: Sequence[str], keys: bool = False) -> None:
        self.app = app
        self.any = "*" in allowed
        self.allowed = frozenset(_normal(origin) for origin in allowed)
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if self.any or not (
            kind == "websocket" or (kind == "http" and scope["method"] not in SAFE_METHODS)
        ):
            await self.app(scope, receive, send)
            return
        origin = host = fetch_site = None
        keyed = False
        for key, value in scope["headers"]:
            if key == b"origin":
                origin = value.decode("latin-1")
            elif key == b"host":
                host = value.decode("latin-1")
            elif key == b"sec-fetch-site":
                fetch_site = value.decode("latin-1").strip().lower()
            elif key == b"authorization":
                keyed = self.keys
        if kind == "websocket":
            if origin is None or self._allowed(_normal(origin), host):
                await self.app(scope, receive, send)
                return
            message = f"The Origin {origin!r} may not open a WebSocket to this gateway"
        else:
            if keyed or self._request_allowed(origin, host, fetch_site):
                await self.app(scope, receive, send)
                return
            named = f"Origin {origin!r}" if origin is not None else f"a {fetch_site} page"
            message = f"A {scope['method']} request from {named} may not reach this gateway"
        error = APIError(
            403,
            f"{message}: only its own origin and those in server.allowed_origins may.",
            code="invalid_origin",
        )
        await refuse(scope, receive, send, error)

    def _request_allowed(
        self, origin: str | None, host: str | None, fetch_site: str | None
    ) -> bool:
        if fetch_site == "same-origin":
            return True
        if origin is not None:
            return self._allowed(_normal(origin), host)
        return fetch_site not in _OTHER_SITES

    def _allowed(self, origin: str, host: str | None) -> bool:
        if origin in self.allowed:
            return True
        scheme = origin.partition("://")[0]
        return host is not None and scheme in ("http", "https") and origin == _origin(scheme, host)
