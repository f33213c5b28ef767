"""Each upstream attempt as an OpenTelemetry client span, named and attributed as the GenAI
conventions say (``chat {model}``, ``gen_ai.*``), with the gateway's routing beside them:
the deployment, the key (``provider#i``), the outcome and the time to the first token.

The span is not left current while its stream is read (the caller reads it, and later
spans, tool calls' among them, are not its children); it is current only while the
request is sent, so that the provider gets its ``traceparent``.
"""

from __future__ import annotations

import time
from contextvars import Token
from dataclasses import dataclass
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind

from ..config import Route
from ..tracing import Tracer, failed
from ..upstream.results import Item, TurnResult

# ``gen_ai.provider.name`` of the wires that are one provider's API.
_WIRE_PROVIDERS = {"anthropic": "anthropic", "responses": "openai"}
_FINISH_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


@dataclass(frozen=True)
class AttemptTarget:
    """What an attempt's span says of where it went (made only when tracing is on)."""

    tracer: Tracer
    provider: str  # as configured
    wire: str
    upstream_model: str
    deployment: str
    key: str | None
    base_url: str | None

    @classmethod
    def of(cls, tracer: Tracer, route: Route, key: str | None) -> AttemptTarget:
        return cls(
            tracer,
            route.provider_name,
            route.provider.wire_api,
            route.upstream_model,
            route.deployment,
            key,
            route.provider.base_url,
        )

    def start(self, request: Item, *, stream: bool) -> Span:
        """The attempt's span, started (as a child of the current one)."""
        attributes: dict[str, str | int | float | bool] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _WIRE_PROVIDERS.get(self.wire, self.provider),
            "gen_ai.request.model": self.upstream_model,
            "gateway.provider": self.provider,
            "gateway.wire": self.wire,
            "gateway.deployment": self.deployment,
            "gateway.stream": stream,
        }
        if self.key is not None:
            attributes["gateway.key"] = self.key
        if self.base_url:
            parts = urlsplit(self.base_url)
            if parts.hostname:
                attributes["server.address"] = parts.hostname
                attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        for name, key in (("max_output_tokens", "max_tokens"), ("temperature", "temperature")):
            value = request.get(name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[f"gen_ai.request.{key}"] = value
        span = self.tracer.start(
            f"chat {self.upstream_model}", kind=SpanKind.CLIENT, attributes=attributes
        )
        self.tracer.content(
            span,
            "gen_ai.client.inference.operation.details",
            {
                "gen_ai.input.messages": request.get("input"),
                "gen_ai.system_instructions": request.get("instructions") or "",
            },
        )
        return span


def sending(span: Span) -> Token[Context] | None:
    """Make ``span`` current while the request goes out (its ``traceparent`` goes with
    it); :func:`sent` once it has gone."""
    if not span.is_recording():
        return None
    return otel_context.attach(trace.set_span_in_context(span))


def sent(token: Token[Context] | None) -> None:
    if token is not None:
        otel_context.detach(token)


def first_token(span: Span, seconds: float) -> None:
    if span.is_recording():
        span.set_attribute("gateway.time_to_first_token", round(seconds, 6))
        span.add_event("gen_ai.first_token", timestamp=time.time_ns())


def answered(span: Span, result: TurnResult, tracer: Tracer, model: str) -> None:
    """The attempt's answer on its span: usage, finish reasons, the outcome."""
    if not span.is_recording():
        return
    span.set_attribute("gen_ai.response.model", model)
    usage = result.usage or {}
    for key, name in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens")):
        if isinstance(usage.get(key), int):
            span.set_attribute(f"gen_ai.usage.{name}", usage[key])
    details = usage.get("input_tokens_details") or {}
    if isinstance(details.get("cached_tokens"), int):
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", details["cached_tokens"])
    if isinstance(details.get("cache_write_tokens"), int):
        span.set_attribute(
            "gen_ai.usage.cache_creation.input_tokens", details["cache_write_tokens"]
        )
    span.set_attribute("gen_ai.response.finish_reasons", [finish_reason(result)])
    if result.cost_usd is not None:
        span.set_attribute("gateway.cost_usd", result.cost_usd)
    if result.status == "failed":
        error = result.error or {}
        failed(span, str(error.get("message") or "failed"), str(error.get("code") or "failed"))
        span.set_attribute("gateway.outcome", "failed_answer")
    else:
        span.set_attribute("gateway.outcome", "answered")
    tracer.content(
        span,
        "gen_ai.client.inference.operation.details",
        {"gen_ai.output.messages": result.output},
    )


def finish_reason(result: TurnResult) -> str:
    """The conventions' finish reason of a turn's result."""
    if result.status == "failed":
        return "error"
    if result.status == "incomplete":
        reason = (result.incomplete_details or {}).get("reason")
        return _FINISH_REASONS.get(str(reason), str(reason or "length"))
    if any(item.get("type") == "function_call" for item in result.output):
        return "tool_calls"
    return "stop"
