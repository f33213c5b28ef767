"""Upstream calls as metrics: latency, time to first token, failures and tokens."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .metrics import Metrics
from .request_log import note_turn
from .upstream import Event, TurnResult, Upstream, UpstreamError
from .upstream.base import UpstreamStream
from .upstream.errors import UpstreamRejected


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
    ) -> None:
        self._events = events
        self._metrics = metrics
        self._labels = labels
        self._model = model
        self._project = project
        self._start = start
        self._first = True

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Event | TurnResult:
        event = await self._events.__anext__()
        if isinstance(event, TurnResult):
            self._finished(event)
        elif self._first and event["type"].endswith(".delta"):
            self._first = False
            self._metrics.upstream_ttft_seconds.labels(*self._labels).observe(
                time.perf_counter() - self._start
            )
        return event

    def _finished(self, result: TurnResult) -> None:
        metrics, labels = self._metrics, self._labels
        elapsed = time.perf_counter() - self._start
        if self._first:
            metrics.upstream_ttft_seconds.labels(*labels).observe(elapsed)
        metrics.upstream_seconds.labels(*labels).observe(elapsed)
        if result.status == "failed":
            metrics.upstream_errors.labels(*labels, "failed_answer").inc()
        metrics.observe_usage(self._project, labels[1], result.usage)
        note_turn(self._project, self._model, result.usage, elapsed)


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
) -> AsyncIterator[UpstreamStream]:
    """``upstream.open(...)``, with its events and failures observed."""
    labels = (provider, metrics.model_label(model))
    start = time.perf_counter()  # an unstreamed call is answered before ``open`` yields
    try:
        async with upstream.open(request, stream=stream) as events:
            yield WatchedStream(events, metrics, labels, model, project, start)
    except UpstreamError as error:
        metrics.upstream_errors.labels(*labels, error_code(error)).inc()
        raise
