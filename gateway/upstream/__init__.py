"""Upstream adapters, one per wire API, all producing Responses events and a result."""

from __future__ import annotations

from .base import Upstream, UpstreamStream
from .errors import UnsupportedInput, UpstreamError
from .reasoning_state import ReasoningState
from .results import Event, TurnResult
from .transport.http import ProviderClient
from .wires.registry import build_upstream

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
