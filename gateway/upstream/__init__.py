"""Upstream adapters, one per wire API, all producing Responses events and a result."""

from __future__ import annotations

from ..config import Route
from .base import Upstream, UpstreamStream
from .errors import UnsupportedInput, UpstreamError
from .reasoning_state import ReasoningState
from .results import Event, TurnResult
from .transport.http import ProviderClient
from .wires.anthropic import AnthropicUpstream
from .wires.anthropic.passthrough import WithoutPassthrough
from .wires.chat.adapter import ChatCompletionsUpstream
from .wires.echo.adapter import EchoUpstream
from .wires.responses.adapter import ResponsesUpstream

__all__ = [
    "Event",
    "ProviderClient",
    "ReasoningState",
    "TurnResult",
    "UnsupportedInput",
    "Upstream",
    "UpstreamError",
    "UpstreamStream",
    "build_upstream",
]


def build_upstream(route: Route, client: ProviderClient | None, state: ReasoningState) -> Upstream:
    """The adapter for ``route``'s provider (cheap: made per request); ``state`` seals and
    opens the reasoning state of its model for the request's project."""
    wire = route.provider.wire_api
    if client is not None and wire == "anthropic":
        return AnthropicUpstream(client, route, state)
    # The other wires read a Messages request's translation, never its client's body.
    if client is not None and wire == "chat_completions":
        return WithoutPassthrough(ChatCompletionsUpstream(client, state))
    if client is not None and wire == "responses":
        return WithoutPassthrough(ResponsesUpstream(client, state))
    return WithoutPassthrough(EchoUpstream())
