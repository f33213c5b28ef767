"""The gateway's tracer: spans named and attributed as OpenTelemetry's GenAI conventions
say, or, when tracing is off, one shared no-op span and nothing else.

Callers open spans with :meth:`Tracer.span` and set what only a recorded span needs under
``if span.is_recording():``, so that a tracer that is off costs a method call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

_MESSAGE_CHARS = 256  # of an error's message on its span


def failed(span: Span, error: BaseException | str, kind: str | None = None) -> None:
    """Mark ``span`` failed: its status, ``error.type`` and an ``exception`` event (the
    error's type and message, never a stack, which may hold a request's values)."""
    if not span.is_recording():
        return
    message = error if isinstance(error, str) else str(getattr(error, "message", error))
    kind = kind or (type(error).__name__ if not isinstance(error, str) else "error")
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, message[:_MESSAGE_CHARS]))
    span.add_event(
        "exception", {"exception.type": kind, "exception.message": message[:_MESSAGE_CHARS]}
    )


class Tracer:
    """Opens the gateway's spans; :data:`NO_TRACER` opens none.

    ``capture_content``: prompts, answers and tool arguments go on spans as the
    conventions' events, each cut to ``max_content_chars``; off, never.
    """

    def __init__(
        self,
        tracer: trace.Tracer | None,
        *,
        capture_content: bool = False,
        max_content_chars: int = 4096,
    ) -> None:
        self._tracer = tracer
        self.enabled = tracer is not None
        self.capture_content = capture_content and tracer is not None
        self._max_chars = max_content_chars
        self._off: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)

    def span(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, AttributeValue] | None = None,
        context: Context | None = None,
        links: Sequence[Link] = (),
    ) -> AbstractContextManager[Span]:
        """A span current while the block runs; an error leaving it marks it failed."""
        if self._tracer is None:
            return self._off
        return self._current(name, kind, attributes, context, links)

    @contextmanager
    def _current(
        self,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, AttributeValue] | None,
        context: Context | None,
        links: Sequence[Link],
    ) -> Iterator[Span]:
        assert self._tracer is not None
        with self._tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=attributes,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except (GeneratorExit, asyncio.CancelledError):
                span.set_attribute("gateway.cancelled", True)
                raise
            except BaseException as error:
                failed(span, error)
                raise

    def start(
        self,
        name: str,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> Span:
        """A span that is not made current (the caller ends it): an upstream attempt,
        whose stream outlives the code that opened it."""
        if self._tracer is None:
            return INVALID_SPAN
        return self._tracer.start_span(name, kind=kind, attributes=attributes)

    def content(self, span: Span, name: str, attributes: Mapping[str, Any]) -> None:
        """Add the conventions' content event ``name`` to ``span``, each value as JSON cut
        to ``max_content_chars``; nothing unless content capture is on."""
        if not self.capture_content or not span.is_recording():
            return
        event: dict[str, AttributeValue] = {}
        for key, value in attributes.items():
            text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
            event[key] = text[: self._max_chars]
        span.add_event(name, event)


NO_TRACER = Tracer(None)
"""The tracer when ``observability.otlp`` is unset: every span is one shared no-op."""
