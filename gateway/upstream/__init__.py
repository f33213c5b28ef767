"""Upstream adapters, one per wire API, all producing Responses events and a result."""

from __future__ import annotations

import httpx

from ..config import Route
from .base import Upstream, UpstreamStream
from .chat_completions import ChatCompletionsUpstream
from .echo import EchoUpstream
from .errors import UnsupportedInput, UpstreamError
from .responses import ResponsesUpstream
from .results import Event, TurnResult

__all__ = [
    "Event",
    "TurnResult",
    "UnsupportedInput",
    "Upstream",
    "UpstreamError",
    "UpstreamStream",
    "build_upstream",
]


def build_upstream(route: Route, client: httpx.AsyncClient | None) -> Upstream:
    """The adapter for ``route``'s provider (cheap: made per request)."""
    wire = route.provider.wire_api
    if client is not None and wire == "chat_completions":
        return ChatCompletionsUpstream(client, route.provider_name, route.provider)
    if client is not None and wire == "responses":
        return ResponsesUpstream(client, route.provider_name, route.provider)
    return EchoUpstream()
