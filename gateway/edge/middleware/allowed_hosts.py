"""Refuse requests whose ``Host`` is not one of the gateway's names, or not a host at all.

A web page can make a browser send requests to a loopback gateway, and DNS rebinding can
make such a page's own name resolve to 127.0.0.1; the ``Host`` header still carries the
page's name, so checking it stops both. The header is read strictly, as RFC 9110 has it:
a name or an IPv4 address, or an IPv6 address in brackets, and an optional port; anything
else (userinfo as in ``localhost:80@evil.example``, a path, a second ``Host``) is a 400
whatever ``server.allowed_hosts`` says, as is an HTTP/1.1 request without one.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from ..errors import error_response

# Labels of letters, digits, "-" and "_" (some internal names hold one), dot-separated, an
# optional root dot; then an optional port of one to five digits.
_NAME = re.compile(r"(?P<name>[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?)(?::(?P<port>[0-9]{1,5}))?")
_BRACKETED = re.compile(r"(?P<name>\[(?P<address>[0-9a-f:.]+)\])(?::(?P<port>[0-9]{1,5}))?")


def host_name(header: str) -> str | None:
    """The name a ``Host`` header holds, in lower case without its port (an IPv6 address in
    its brackets); ``None`` when the header is not ``host[:port]``."""
    header = header.lower()
    bracketed = header.startswith("[")
    found = (_BRACKETED if bracketed else _NAME).fullmatch(header)
    if found is None or int(found["port"] or 0) > 65535:
        return None
    if bracketed:
        try:
            ipaddress.IPv6Address(found["address"])
        except ValueError:
            return None
    return found["name"]


class AllowedHostsMiddleware:
    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.any = "*" in allowed
        self.allowed = frozenset(name.lower() for name in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [value for key, value in scope["headers"] if key == b"host"]
        problem = self._problem([value.decode("latin-1") for value in hosts], scope)
        if problem is None:
            await self.app(scope, receive, send)
            return
        await error_response(APIError(400, problem, code="invalid_host"))(scope, receive, send)

    def _problem(self, hosts: list[str], scope: Scope) -> str | None:
        """Why a request with these ``Host`` headers is refused (``None``: it is not)."""
        if len(hosts) > 1:
            return "A request may carry one Host header only."
        if not hosts:
            if self.any and scope.get("http_version") == "1.0":
                return None
            return "The request has no Host header: send the gateway's name and port."
        name, shown = host_name(hosts[0]), hosts[0][:100]
        if name is None:
            return f"The Host header {shown!r} is not a host name and optional port."
        if self.any or name in self.allowed:
            return None
        return (
            f"The Host header {shown!r} is not an allowed name for this gateway "
            "(server.allowed_hosts)."
        )
