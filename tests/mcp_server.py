"""A real MCP server for the tests: the ``mcp`` SDK's MCPServer over streamable HTTP.

Its tools: ``roll`` (answers), ``boom`` (an error of the tool), ``slow`` (waits until
released, or ``seconds``), ``shout`` (read-only). It records the headers of every request
it receives, so tests see what reached it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from starlette.types import ASGIApp, Receive, Scope, Send

from .servers import serve


@dataclass
class McpServer:
    url: str  # the streamable HTTP endpoint
    headers: list[dict[str, str]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)


def _recording(app: ASGIApp, server: McpServer) -> ASGIApp:
    async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            server.headers.append(
                {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            )
        await app(scope, receive, send)

    return recorded


def _app(server: McpServer, sse: bool) -> ASGIApp:
    mcp = MCPServer("dice")

    @mcp.tool(description="Roll a die of the given number of sides.")
    def roll(sides: int) -> str:
        server.calls.append(("roll", {"sides": sides}))
        return f"rolled a {sides}"

    @mcp.tool(description="Always fails.")
    def boom() -> str:
        server.calls.append(("boom", {}))
        raise ValueError("the dice fell off the table")

    @mcp.tool(description="Answers once released, or after the given seconds.")
    async def slow(seconds: float = 30.0) -> str:
        server.calls.append(("slow", {"seconds": seconds}))
        release = server.release  # the test's own: a later test's is a new one
        try:
            for _ in range(int(seconds * 20)):
                if release.is_set():
                    return "released"
                await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            server.cancelled.set()
            raise
        return "waited"

    @mcp.tool(
        description="Repeats the text in capitals.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    def shout(text: str) -> str:
        server.calls.append(("shout", {"text": text}))
        return text.upper()

    if sse:
        return _recording(mcp.sse_app(), server)
    return _recording(mcp.streamable_http_app(stateless_http=True, json_response=True), server)


@contextmanager
def mcp_server(sse: bool = False) -> Iterator[McpServer]:
    """The server on a loopback port until the block ends; with ``sse``, the older SSE
    transport (its URL ends in ``/sse``)."""
    server = McpServer(url="")
    with serve(_app(server, sse)) as base:
        server.url = f"{base}/sse" if sse else f"{base}/mcp"
        yield server
