"""Upstream calls as metrics: latency, time to first token, failures and tokens.

Every call a request makes upstream goes through here: a turn's, a summary written for a
compaction, an upstream's own compaction or count of input tokens.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TypeVar

from opentelemetry.trace import INVALID_SPAN, Span

from ..tracing import Step, begin, failed, finish
from ..upstream import Event, TurnResult, Upstream, UpstreamError
from ..upstream.base import NONE, Capabilities, UpstreamStream, Wrapping
from ..upstream.errors import UpstreamRejected
from ..upstream.results import Item
from ..upstream.routing.prices import Price
from .attempt_spans import AttemptTarget, answered, first_token, sending, sent
from .metrics import Metrics
from .request_log import note_turn, note_upstream

T = TypeVar("T")


def error_code(error: UpstreamError) -> str:
    """A bounded label for an upstream failure: its kind, or the provider's HTTP status."""
    if isinstance(error, UpstreamRejected):
        return f"http_{error.status}"
    return type(error).__name__.removeprefix("Upstream").lower()


class WatchedStream:
    """Relays an upstream's events unchanged, observing them on the way."""

    def __init__(
        self,
        events: UpstreamStream,
        metrics: Metrics,
        labels: tuple[str, str],
        model: str,
        project: str,
        start: float,
        pricing: Price | None = None,
        route: Item | None = None,
        span: Span = INVALID_SPAN,
        target: AttemptTarget | None = None,
        step: Step | None = None,
    ) -> None:
        self._step = step
        self._span = span
        self._target = target
        self._events = events
        self._route = route
        self._pricing = pricing
        self._metrics = metrics
        self._labels = labels
        self._model = model
        self._project = project
        self._start = start
        self._first = True
        self._first_at: float | None = None

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Event | TurnResult:
        event = await self._events.__anext__()
        if isinstance(event, TurnResult):
            self._finished(event)
        elif self._first and event["type"].endswith(".delta"):
            self._first = False
            self._first_at = time.time()
            waited = time.perf_counter() - self._start
            self._metrics.upstream_ttft_seconds.labels(*self._labels).observe(waited)
            first_token(self._span, waited)
            if self._step is not None:
                self._step["first_token"] = self._first_at
        return event

    def _finished(self, result: TurnResult) -> None:
        metrics, labels = self._metrics, self._labels
        elapsed = time.perf_counter() - self._start
        if self._first:
            metrics.upstream_ttft_seconds.labels(*labels).observe(elapsed)
        result.first_token_at = self._first_at or time.time()
        metrics.upstream_seconds.labels(*labels).observe(elapsed)
        if result.status == "failed":
            metrics.upstream_errors.labels(*labels, "failed_answer").inc()
        metrics.observe_usage(self._project, labels[1], result.usage)
        if self._route is not None and result.usage:
            deployment, key = self._route["answered_by"], self._route["key"] or "-"
            metrics.observe_prompt_cache(deployment, key, result.usage)
        if self._pricing is not None and result.usage:
            result.cost_usd = self._pricing.cost(result.usage)
            if result.cost_usd is not None:
                result.cost_source = self._pricing.source
                metrics.cost_usd.labels(self._project, labels[1]).inc(result.cost_usd)
        note_turn(self._project, self._model, result.usage, elapsed)
        if result.route is None:  # a routed turn's routing records its every attempt
            result.route = self._route
        if self._target is not None:
            answered(self._span, result, self._target.tracer, self._target.upstream_model)
        if self._step is not None:
            self._step.setdefault("first_token", result.first_token_at)
            finish(self._step, outcome="answered" if result.status != "failed" else "failed")


@asynccontextmanager
async def watched(
    upstream: Upstream,
    request: dict[str, object],
    *,
    stream: bool,
    metrics: Metrics,
    provider: str,
    model: str,
    project: str,
    deployment: str,
    pricing: Price | None = None,
    key: str | None = None,
    attempt: bool = False,
    target: AttemptTarget | None = None,
) -> AsyncIterator[UpstreamStream]:
    """``upstream.open(...)``, with its events and failures observed (and priced);
    ``attempt``: counted as a turn's one attempt too (routing counts its own);
    ``target``: traced as an attempt's span (tracing on)."""
    labels = (provider, metrics.model_label(model))
    span = INVALID_SPAN if target is None else target.start(request, stream=stream)
    step = begin("attempt", deployment, key=key, model=model)
    start = time.perf_counter()  # an unstreamed call is answered before ``open`` yields
    try:
        async with AsyncExitStack() as stack:
            token = sending(span)
            try:
                events = await stack.enter_async_context(upstream.open(request, stream=stream))
            finally:
                sent(token)
            if attempt:
                metrics.upstream_attempts.labels(*labels, "answered").inc()
            note_upstream(deployment)
            route: Item = {"answered_by": deployment, "key": key, "attempts": []}
            yield WatchedStream(
                events, metrics, labels, model, project, start, pricing, route, span, target, step
            )
    except UpstreamError as error:
        if isinstance(error, UpstreamRejected):  # the provider answered, with an error
            note_upstream(deployment)
        metrics.upstream_errors.labels(*labels, error_code(error)).inc()
        if attempt:
            metrics.upstream_attempts.labels(*labels, error_code(error)).inc()
        if span.is_recording():
            span.set_attribute("gateway.outcome", error_code(error))
            failed(span, error, error_code(error))
        finish(step, outcome=error_code(error))
        raise
    finally:
        finish(step, outcome="abandoned")  # read no further (routing tried another)
        span.end()


class MeteredUpstream(Wrapping):
    """An upstream whose every call is observed as :func:`watched` observes one, its
    capabilities (counting tokens, compacting) included."""

    def __init__(
        self,
        inner: Upstream,
        metrics: Metrics,
        provider: str,
        model: str,
        project: str,
        deployment: str,
        pricing: Price | None = None,
        key: str | None = None,
        attempt: bool = False,
        target: AttemptTarget | None = None,
    ) -> None:
        super().__init__(inner)
        self._target = target  # tracing on: each call is an attempt's span
        self._attempt = attempt  # a turn's only attempt: no routing counts it
        self._deployment = deployment
        self._key = key
        self._pricing = pricing
        self._metrics = metrics
        self._provider = provider
        self._model = model
        self._project = project
        offered = inner.capabilities
        if offered is not NONE:  # each call made on a capability is metered too
            count, compact = offered.count_input_tokens, offered.compact
            self.capabilities = Capabilities(
                count_input_tokens=None if count is None else self._metered(count),
                compact=None if compact is None else self._metered(compact),
            )

    def open(self, request: Item, *, stream: bool) -> AbstractAsyncContextManager[UpstreamStream]:
        return watched(
            self._inner,
            request,
            stream=stream,
            metrics=self._metrics,
            provider=self._provider,
            model=self._model,
            project=self._project,
            deployment=self._deployment,
            pricing=self._pricing,
            key=self._key,
            attempt=self._attempt,
            target=self._target,
        )

    def _metered(self, call: Callable[[Item], Awaitable[T]]) -> Callable[[Item], Awaitable[T]]:
        """``call``, observed: latency, failures and the ``usage`` its answer reports."""
        metrics = self._metrics
        labels = (self._provider, metrics.model_label(self._model))

        async def metered(request: Item) -> T:
            start = time.perf_counter()
            try:
                answer = await call(request)
            except UpstreamError as error:
                if isinstance(error, UpstreamRejected):
                    note_upstream(self._deployment)
                metrics.upstream_errors.labels(*labels, error_code(error)).inc()
                raise
            note_upstream(self._deployment)
            elapsed = time.perf_counter() - start
            metrics.upstream_seconds.labels(*labels).observe(elapsed)
            usage = answer.get("usage") if isinstance(answer, dict) else None
            usage = usage if isinstance(usage, dict) else None
            metrics.observe_usage(self._project, labels[1], usage)
            note_turn(self._project, self._model, usage, elapsed)
            return answer

        return metered
