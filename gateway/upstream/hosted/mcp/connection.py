"""One live session with an MCP server for one turn, through the official ``mcp`` SDK.

Streamable HTTP by default; a URL whose path ends in ``/sse`` uses the older SSE
transport. Every request (redirects included: the SDK follows those only on the
endpoint's own origin) passes the address check again, and every step has a time limit:
connecting and listing ``connect_timeout_seconds``, each call ``call_timeout_seconds``.
What fails becomes :class:`McpFailure`, whose ``error`` is the ``mcp_call`` error object
OpenAI's clients parse (``http_error``, ``mcp_protocol_error`` or
``mcp_tool_execution_error``). The headers are sent, never logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ....config_sections import McpSettings
from ....errors import APIError
from ...results import Item
from ...transport.addresses import Resolver
from .servers import Server, refused

if TYPE_CHECKING:
    import httpx2
    from mcp import Client

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT = -32001  # the MCP SDK's code for a request that timed out


class McpFailure(Exception):
    """What went wrong talking to a server, as an ``mcp_call`` error object."""

    def __init__(self, message: str, error: Item) -> None:
        super().__init__(message)
        self.message = message
        self.error = error


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups the SDK's task groups raise."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def failure(server: Server, error: BaseException, seconds: float) -> McpFailure:
    """``error`` (raised by the SDK or the transport) in words and as an error object."""
    import httpx2
    from mcp import MCPError

    from ...transport.pinned import RefusedAddress

    label = server.label
    error = _leaf(error)
    if isinstance(error, McpFailure):
        return error
    if isinstance(error, RefusedAddress):
        error = refused(f"tools[{server.index}].server_url", error.reason)
    if isinstance(error, TimeoutError):
        message = f"The MCP server '{label}' did not answer within {seconds:g} seconds."
        return McpFailure(message, _protocol(REQUEST_TIMEOUT, message))
    if isinstance(error, MCPError):
        message = f"The MCP server '{label}' answered with an error: {error.message}"
        return McpFailure(message, _protocol(error.code, error.message))
    if isinstance(error, httpx2.HTTPStatusError):
        status = error.response.status_code
        message = f"The MCP server '{label}' answered with HTTP status {status}."
        return McpFailure(message, {"type": "http_error", "code": status, "message": message})
    if isinstance(error, APIError):
        return McpFailure(
            error.message, {"type": "http_error", "code": 403, "message": error.message}
        )
    message = f"The MCP server '{label}' could not be reached ({type(error).__name__})."
    return McpFailure(message, {"type": "http_error", "code": 502, "message": message})


def _protocol(code: int, message: str) -> Item:
    return {"type": "mcp_protocol_error", "code": code, "message": message}


def output_text(result: Any) -> str:
    """A tool result's content as the text the model reads: its text parts, other parts
    (and structured content alone) as JSON."""
    parts = []
    for block in result.content or []:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            parts.append(json.dumps(block.model_dump(mode="json", exclude_none=True)))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


class Connection:
    """A connected server: list its tools, call them."""

    def __init__(self, server: Server, client: Client, settings: McpSettings) -> None:
        self.server = server
        self._client = client
        self._settings = settings

    async def list_tools(self) -> list[Item]:
        """Every tool (all pages), shaped as an ``mcp_list_tools`` item lists them."""
        seconds = self._settings.connect_timeout_seconds
        tools: list[Item] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(seconds):
                for _ in range(100):
                    page = await self._client.list_tools(cursor=cursor)
                    tools += [_listed(tool) for tool in page.tools]
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except Exception as error:
            raise failure(self.server, error, seconds) from None
        return tools

    async def call(self, name: str, arguments: Item, seconds: float) -> str:
        """The tool's output text; :class:`McpFailure` for an error, the tool's own included."""
        try:
            async with asyncio.timeout(seconds):
                result = await self._client.call_tool(name, arguments, read_timeout_seconds=seconds)
        except Exception as error:
            raise failure(self.server, error, seconds) from None
        if result.is_error:
            content = [block.model_dump(mode="json", exclude_none=True) for block in result.content]
            message = output_text(result)
            raise McpFailure(message, {"type": "mcp_tool_execution_error", "content": content})
        return output_text(result)


def _listed(tool: Any) -> Item:
    listed: Item = {"name": tool.name, "input_schema": tool.input_schema}
    if tool.description is not None:
        listed["description"] = tool.description
    if tool.annotations is not None:
        listed["annotations"] = tool.annotations.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    return listed


def _same_host(server: Server) -> Any:
    """An httpx request hook for a listed server: each request (a redirect too) stays on
    its host."""
    param = f"tools[{server.index}].server_url"

    async def check(request: httpx2.Request) -> None:
        if request.url.host != urlsplit(server.url).hostname:
            raise APIError(400, f"The MCP server in '{param}' redirected to another host.")

    return check


@asynccontextmanager
async def connect(
    server: Server, settings: McpSettings, resolver: Resolver
) -> AsyncIterator[Connection]:
    """A session with ``server``, closed when the block ends; :class:`McpFailure` when it
    cannot be opened in time, or its address is not allowed. A server the operator did not
    list is reached only at public addresses ``resolver`` gave and the gateway checked."""
    import httpx2  # the SDK takes a third of a second to import: not before it is needed
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    from ...transport.pinned import PinnedTransport

    seconds = settings.connect_timeout_seconds
    # The transport reads a little longer than a call may last: the call's own limit
    # ends it first, and says so.
    read = settings.call_timeout_seconds + seconds
    timeout = httpx2.Timeout(seconds, read=read)
    hooks = {"request": [_same_host(server)]} if server.listed else {}

    def http_client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = timeout,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        if server.listed:
            return httpx2.AsyncClient(
                headers=headers,
                timeout=timeout,
                auth=auth,
                event_hooks=hooks,
                follow_redirects=False,
            )
        # No proxy from the environment: it would resolve the name again, unchecked.
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout,
            auth=auth,
            follow_redirects=False,
            trust_env=False,
            transport=PinnedTransport(resolver),
        )

    stack = AsyncExitStack()
    try:
        try:
            async with asyncio.timeout(seconds):
                if urlsplit(server.url).path.rstrip("/").endswith("/sse"):
                    transport: Any = sse_client(
                        server.url,
                        headers=server.headers,
                        timeout=seconds,
                        sse_read_timeout=read,
                        httpx_client_factory=http_client,
                    )
                else:
                    http = await stack.enter_async_context(http_client(server.headers))
                    transport = streamable_http_client(server.url, http_client=http)
                client = Client(transport, cache=None, read_timeout_seconds=read)
                await stack.enter_async_context(client)
        except Exception as error:
            raise failure(server, error, seconds) from None
        yield Connection(server, client, settings)
    finally:
        await _close(stack)


async def _close(stack: AsyncExitStack) -> None:
    """Close a session; what its transport's tasks raise on the way (a read cut short by
    a call's time limit, say) is over with."""
    try:
        await stack.aclose()
    except Exception as error:
        logger.debug("an MCP session closed with %s", type(_leaf(error)).__name__)
