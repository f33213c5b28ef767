"""W3C trace context in and out: a client's ``traceparent`` (and ``tracestate``) parents
the gateway's spans, each answer carries the gateway's own, and each upstream request
carries its attempt's span so that a provider's trace joins the gateway's."""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_W3C = TraceContextTextMapPropagator()
_NONE: dict[str, str] = {}

SEPARATE_TRACES: ContextVar[bool] = ContextVar("gateway_separate_traces", default=False)
"""Set while a WebSocket is served: each of its turns starts a trace of its own, linked to
the socket's span (a socket may live for hours)."""


def client_context(headers: Iterable[tuple[bytes, bytes]]) -> Context | None:
    """The client's trace context from its ``traceparent`` and ``tracestate`` headers
    (``None`` when it sent none, or one that is not valid)."""
    carrier: dict[str, str] = {}
    for name, value in headers:
        if name in (b"traceparent", b"tracestate"):
            carrier[name.decode()] = value.decode("latin-1")
    if "traceparent" not in carrier:
        return None
    context = _W3C.extract(carrier)
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def traceparent(span: Span) -> str | None:
    """``span``'s ``traceparent`` header value (``None`` for a span that is not recorded)."""
    context = span.get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def upstream_headers() -> dict[str, str]:
    """The headers that carry the current span to a provider: ``traceparent`` (and
    ``tracestate``) while an upstream attempt is traced, else none."""
    span = trace.get_current_span()
    if not span.get_span_context().is_valid:
        return _NONE
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier


def routing_event(event: str, deployment: str, key: str, detail: str) -> None:
    """A routing decision (``retry``, ``fallback``, ``cooldown``, ...) as an event of the
    current span: the turn's."""
    span = trace.get_current_span()
    if span.is_recording() and event not in ("answered", "failed"):
        span.add_event(
            f"gateway.{event}",
            {"gateway.deployment": deployment, "gateway.key": key, "gateway.reason": detail},
        )
