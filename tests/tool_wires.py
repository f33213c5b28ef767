"""A gateway with a model on every wire (chat, anthropic, responses, echo), the fakes
behind it, and the MCP test server allowed: what the tool tests share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_anthropic import ANTHROPIC_KEY, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream
from .mcp_server import McpServer
from .servers import serve

# The model of each wire, by the wire's name.
MODELS = {
    "chat_completions": "chat-model",
    "anthropic": "claude",
    "responses": "resp-model",
    "echo": "echo-model",
}
# A PNG's first bytes, base64: the strict fake Anthropic checks that an image is one.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAAB"
    "JRU5ErkJggg=="
)
SCREENSHOT = f"data:image/png;base64,{PNG}"


@dataclass
class Wires:
    gateway: Gateway
    chat: FakeUpstream  # also the responses upstream
    claude: FakeAnthropic


@contextmanager
def wires_gateway(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic: tuple[FakeAnthropic, str],
    path: Path,
    dice: McpServer | None = None,
    providers: dict[str, Any] | None = None,
) -> Iterator[Wires]:
    fake, url = fake_upstream
    claude, claude_url = anthropic
    claude.reset()
    raw_providers: dict[str, Any] = {
        "fake-chat": {
            "wire_api": "chat_completions",
            "base_url": f"{url}/v1",
            "api_key": UPSTREAM_KEY,
        },
        "fake-responses": {
            "wire_api": "responses",
            "base_url": f"{url}/v1",
            "api_key": UPSTREAM_KEY,
        },
        "claude": {"wire_api": "anthropic", "base_url": claude_url, "api_key": ANTHROPIC_KEY},
        "echo": {"wire_api": "echo"},
    }
    for name, extra in (providers or {}).items():
        raw_providers[name] = {**raw_providers[name], **extra}
    overrides: dict[str, Any] = {
        "providers": raw_providers,
        "models": {
            "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
            "resp-model": {"provider": "fake-responses", "upstream_model": "upstream-resp"},
            "claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"},
            "echo-model": {"provider": "echo"},
        },
    }
    if dice is not None:
        overrides["mcp"] = {"allowed_servers": [dice.url], "call_timeout_seconds": 5}
    config = gateway_config(url, path / "sessions.db", **overrides)
    with serve(create_app(config)) as gateway_url:
        gateway = Gateway(gateway_url, config, fake)
        try:
            yield Wires(gateway, fake, claude)
        finally:
            for client in gateway.clients:
                client.close()
