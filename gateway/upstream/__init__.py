"""Upstream adapters, one per wire API, all producing Responses events and a result."""

from __future__ import annotations

from ..config import Route
from .base import Upstream, UpstreamStream
from .chat_completions import ChatCompletionsUpstream
from .echo import EchoUpstream
from .errors import UnsupportedInput, UpstreamError
from .http import ProviderClient
from .responses import ResponsesUpstream
from .results import Event, TurnResult

__all__ = [
    "Event",
    "ProviderClient",
    "TurnResult",
    "UnsupportedInput",
    "Upstream",
    "UpstreamError",
    "UpstreamStream",
    "build_upstream",
]


def build_upstream(route: Route, client: ProviderClient | None) -> Upstream:
    """The adapter for ``route``'s provider (cheap: made per request)."""
    wire = route.provider.wire_api
    if client is not None and wire == "chat_completions":
        return ChatCompletionsUpstream(client)
    if client is not None and wire == "responses":
        return ResponsesUpstream(client)
    return EchoUpstream()
