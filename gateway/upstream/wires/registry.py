"""The adapter that speaks each wire API, by the names of :data:`gateway.wire_settings.WIRES`
(a test keeps the two tables' names equal). Only the Anthropic wire reads a Messages
client's own body; the others get its translation alone."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ...config import Route
from ..base import Upstream
from ..reasoning_state import ReasoningState
from ..transport.http import ProviderClient
from .anthropic import AnthropicUpstream
from .anthropic.passthrough import WithoutPassthrough
from .chat.adapter import ChatCompletionsUpstream
from .echo.adapter import EchoUpstream
from .responses.adapter import ResponsesUpstream

# An adapter for a route, given its provider's client (``None`` for a wire that needs none)
# and the reasoning state of its model for the request's project.
Build = Callable[[ProviderClient | None, Route, ReasoningState], Upstream]


def _connected(client: ProviderClient | None) -> ProviderClient:
    if client is None:
        raise RuntimeError("a wire that speaks HTTP was given no client")
    return client


ADAPTERS: Mapping[str, Build] = MappingProxyType(
    {
        "chat_completions": lambda client, route, state: WithoutPassthrough(
            ChatCompletionsUpstream(_connected(client), state)
        ),
        "responses": lambda client, route, state: WithoutPassthrough(
            ResponsesUpstream(_connected(client), state)
        ),
        "anthropic": lambda client, route, state: AnthropicUpstream(
            _connected(client), route, state
        ),
        "echo": lambda client, route, state: WithoutPassthrough(EchoUpstream()),
    }
)


def build_upstream(route: Route, client: ProviderClient | None, state: ReasoningState) -> Upstream:
    """The adapter for ``route``'s provider (cheap: made per request)."""
    return ADAPTERS[route.provider.wire_api](client, route, state)
