"""The gateway with MCP settings against the test MCP server, and the tests' helpers:
the tool, the scripted calls, what went to the model."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from gateway import create_app
from gateway.upstream.transport.addresses import Resolver

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .mcp_server import McpServer
from .servers import serve

SECRET = "mcp-header-secret-9f8e7d"
ROLL = "mcp__dice__roll"


@contextmanager
def mcp_gateway(
    fake_upstream: tuple[FakeUpstream, str],
    path: Path,
    dice: McpServer,
    resolver: Resolver | None = None,
    **settings: Any,
) -> Iterator[Gateway]:
    """A gateway whose MCP allow list holds the test server (and nothing else); it asks
    ``resolver`` (by default the system) for the addresses of server names."""
    dice.headers.clear()
    dice.calls.clear()
    dice.release = threading.Event()
    dice.cancelled.clear()
    fake, url = fake_upstream
    settings = {
        "allowed_servers": [dice.url],
        "call_timeout_seconds": 5,
        "connect_timeout_seconds": 5,
        "servers": {"house": {"url": dice.url, "description": "the house dice"}},
        **settings,
    }
    config = gateway_config(url, path / "sessions.db", mcp=settings)
    with serve(create_app(config, resolver=resolver)) as gateway_url:
        gateway = Gateway(gateway_url, config, fake)
        try:
            yield gateway
        finally:
            dice.release.set()  # a slow call still running returns
            for client in gateway.clients:
                client.close()


def dice_tool(server: McpServer, **fields: Any) -> dict[str, Any]:
    tool = {"type": "mcp", "server_label": "dice", "server_url": server.url}
    tool.setdefault("require_approval", "never")
    return {**tool, **fields}


def call(name: str = ROLL, arguments: str = '{"sides": 6}', call_id: str = "c1") -> Reply:
    return Reply(tool_calls=[(call_id, name, arguments)], finish_reason="tool_calls")


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def approval(request_id: Any, approve: bool, reason: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": approve,
    }
    if reason is not None:
        answer["reason"] = reason
    return answer


def error_of(answer: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = answer.json()["error"]
    return error


def finished(client: Any, response_id: str) -> Any:
    for _ in range(600):
        response = client.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        threading.Event().wait(0.05)
    raise AssertionError("the background response never finished")
