"""A turn as a span: opened before its context is resolved, ended once it is stored, with
who made it, what it chains from and how it ended.

A background turn, and each turn of a WebSocket, starts a trace of its own that links to
the request that started it (which ends long before the turn does); any other turn is a
child of its request's span, and so of the client's ``traceparent``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span

from session import StoredResponse

from ..api.request_body import CreateResponseBody
from ..observability.request_log import CURRENT_REQUEST
from ..tracing import SEPARATE_TRACES, Tracer, failed


def turn_span(
    tracer: Tracer, body: CreateResponseBody, project: str
) -> AbstractContextManager[Span]:
    """The turn's span, current while it runs (the shared no-op when tracing is off)."""
    if not tracer.enabled:
        return tracer.span("turn")
    context: Context | None = None
    links: list[Link] = []
    if body.background or SEPARATE_TRACES.get():
        started_by = trace.get_current_span().get_span_context()
        context = Context()  # a root: the request that started it ends first
        links = [Link(started_by, {"gateway.link": "started_by"})] if started_by.is_valid else []
    attributes: dict[str, str | bool] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.request.model": body.model,
        "gateway.project": project,
        "gateway.stream": bool(body.stream),
        "gateway.background": bool(body.background),
        "gateway.store": bool(body.store),
    }
    log = CURRENT_REQUEST.get()
    if log is not None:
        attributes["gateway.request_id"] = log.request_id
        if log.key_id is not None:
            attributes["gateway.key_id"] = log.key_id
    return tracer.span(f"turn {body.model}", context=context, links=links, attributes=attributes)


def record_started(span: Span, record: StoredResponse) -> None:
    """The turn's ids on its span, once its record is made."""
    if not span.is_recording():
        return
    span.set_attribute("gen_ai.response.id", record.id)
    if record.previous_response_id is not None:
        span.set_attribute("gateway.previous_response_id", record.previous_response_id)
    if record.conversation_id is not None:
        span.set_attribute("gen_ai.conversation.id", record.conversation_id)


def record_finished(span: Span, record: StoredResponse) -> None:
    """How the turn ended, on its span: its status, usage and cost (a failure as one)."""
    if not span.is_recording():
        return
    span.set_attribute("gateway.status", record.status)
    usage = record.response.usage or {}
    for key in ("input_tokens", "output_tokens"):
        if isinstance(usage.get(key), int):
            span.set_attribute(f"gen_ai.usage.{key}", usage[key])
    cost = record.metadata.get("cost_usd")
    if isinstance(cost, int | float):
        span.set_attribute("gateway.cost_usd", cost)
    route = record.metadata.get("route") or {}
    if route.get("answered_by"):
        span.set_attribute("gateway.deployment", route["answered_by"])
    if record.status == "failed":
        error = record.response.error or {}
        failed(span, str(error.get("message") or "failed"), str(error.get("code") or "failed"))
