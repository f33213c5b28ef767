"""Traces: OpenTelemetry spans of the gateway's work, exported over OTLP when configured.

A :class:`Tracer` is chosen once, at start: :data:`NO_TRACER` when ``observability.otlp``
is unset, whose spans are one shared no-op (the request path does no tracing work), else
one made by :func:`start_tracing` over the OpenTelemetry SDK.
"""

from .propagation import (
    SEPARATE_TRACES,
    client_context,
    routing_event,
    traceparent,
    upstream_headers,
)
from .provider import Tracing, start_tracing
from .timeline import CURRENT_TIMELINE, Step, Timeline, begin, finish
from .tracer import NO_TRACER, Tracer, failed

__all__ = [
    "CURRENT_TIMELINE",
    "NO_TRACER",
    "SEPARATE_TRACES",
    "Step",
    "Timeline",
    "Tracer",
    "Tracing",
    "begin",
    "client_context",
    "failed",
    "finish",
    "routing_event",
    "start_tracing",
    "traceparent",
    "upstream_headers",
]
