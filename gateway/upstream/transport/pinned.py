"""An HTTP transport that connects only to the address it checked: no DNS rebinding.

A check that resolves a name and a connection that resolves it again can get different
answers (a name with a TTL of 0 can answer a public address, then loopback). Here each
request's host is resolved once, by the gateway's :class:`~.addresses.Resolver`; every
address must pass the check (public, by default); the request is then sent to the first
of them, with the name kept as the ``Host`` header and, over TLS, as the server name the
certificate is verified against. Redirects the client follows come through here too.

Any fetch the gateway makes on a client's behalf (an MCP server, a page) goes through
this transport; what it refuses is a :class:`RefusedAddress`, an ``httpx2.ConnectError``.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx2

from .addresses import AddressRefused, Resolver, is_public, public_addresses

DEFAULT_PORTS = {"http": 80, "https": 443}


class RefusedAddress(httpx2.ConnectError):
    """The request's host is not one the gateway may reach; ``reason`` says why."""

    def __init__(self, refusal: AddressRefused, request: httpx2.Request) -> None:
        super().__init__(str(refusal), request=request)
        self.reason = refusal.reason


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends each request to an address of its host that ``allowed`` accepts, resolved once.

    ``inner`` makes the connections (by default an ``httpx2.AsyncHTTPTransport`` that
    reads no proxy settings: a proxy would resolve the name again, unchecked).
    """

    def __init__(
        self,
        resolver: Resolver,
        *,
        allowed: Callable[[str], bool] = is_public,
        inner: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._resolver = resolver
        self._allowed = allowed
        self._inner = inner or httpx2.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        port = url.port or DEFAULT_PORTS.get(url.scheme, 80)
        try:
            addresses = await public_addresses(url.host, port, self._resolver, self._allowed)
        except AddressRefused as refusal:
            raise RefusedAddress(refusal, request) from None
        extensions = dict(request.extensions)
        if url.scheme == "https":
            extensions.setdefault("sni_hostname", url.host)
        pinned = httpx2.Request(
            request.method,
            url.copy_with(host=addresses[0]),
            headers=request.headers,  # its Host header still names the host
            stream=request.stream,
            extensions=extensions,
        )
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()
