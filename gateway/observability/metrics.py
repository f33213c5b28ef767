"""Prometheus metrics: one registry per app, or files shared by ``server.workers`` processes.

With ``PROMETHEUS_MULTIPROC_DIR`` set (``gateway serve`` sets it for several workers),
every process writes its values there and ``/metrics`` in any worker reports the sum.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Generic, TypeVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

from session import token_counts

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
MAX_MODEL_LABELS = 200
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5)
DEPTH_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
TOKEN_KINDS = ("input", "output", "cached", "reasoning")


M = TypeVar("M", Counter, Histogram)


class Family(Generic[M]):
    """A labelled metric whose children are looked up once per label values.

    prometheus_client checks and locks on every ``labels()`` call; a turn touches a dozen
    children, always the same few.
    """

    def __init__(self, metric: M) -> None:
        self.metric: M = metric
        self._children: dict[tuple[str, ...], M] = {}

    def labels(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


class Metrics:
    """Every metric the gateway keeps; labels are bounded (routes, providers, models)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._models: set[str] = set()

        def histogram(name: str, doc: str, labels: tuple[str, ...], **kw: Any) -> Family[Histogram]:
            return Family(Histogram(name, doc, labels, registry=self.registry, **kw))

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Family[Counter]:
            return Family(Counter(name, doc, labels, registry=self.registry))

        self.requests = counter(
            "gateway_requests", "HTTP requests answered.", ("route", "method", "status")
        )
        self.request_seconds = histogram(
            "gateway_request_duration_seconds",
            "Time from a request's arrival to the end of its response.",
            ("route", "method"),
            buckets=LATENCY_BUCKETS,
        )
        self.upstream_seconds = histogram(
            "gateway_upstream_duration_seconds",
            "Time from opening an upstream call to its complete answer.",
            ("provider", "model"),
            buckets=LATENCY_BUCKETS,
        )
        self.upstream_ttft_seconds = histogram(
            "gateway_upstream_time_to_first_token_seconds",
            "Time from opening an upstream call to its first output (its answer, unstreamed).",
            ("provider", "model"),
            buckets=LATENCY_BUCKETS,
        )
        self.upstream_errors = counter(
            "gateway_upstream_errors",
            "Upstream calls that failed, by error code.",
            ("provider", "model", "code"),
        )
        self.cost_usd = counter(
            "gateway_cost_usd", "What upstream calls cost, for priced models.", ("project", "model")
        )
        self.routing_events = counter(
            "gateway_routing_events",
            "Routing: calls answered or failed, cooldowns started, fallbacks taken.",
            ("model", "deployment", "event"),
        )
        self.upstream_attempts = counter(
            "gateway_upstream_attempts",
            "Calls routing made upstream, by outcome (as a turn's route records its attempts).",
            ("provider", "model", "outcome"),
        )
        self.upstream_retries = counter(
            "gateway_upstream_retries",
            "Attempts routing made again after one failed, by the failed attempt's outcome.",
            ("provider", "reason"),
        )
        self.affinity = counter(
            "gateway_routing_affinity",
            "Turns with an affinity (chain, conversation, prompt_cache_key): kept where "
            "their prompt cache is, moved elsewhere, or new.",
            ("model", "source", "outcome"),
        )
        self.prompt_cache_tokens = counter(
            "gateway_prompt_cache_tokens",
            "Input tokens of upstream calls by deployment and key: all (input) and those read "
            "from the provider's prompt cache (cached); cached / input is the hit rate.",
            ("deployment", "key", "kind"),
        )
        self.tokens = counter(
            "gateway_tokens", "Tokens reported by upstreams.", ("project", "model", "kind")
        )
        self.turns = counter(
            "gateway_turns",
            "Turns finished (saved, or kept for usage when not stored), by status.",
            ("project", "model", "status"),
        )
        self.chain_depth = Histogram(
            "gateway_chain_depth",
            "Turns resolved from previous_response_id per request.",
            registry=self.registry,
            buckets=DEPTH_BUCKETS,
        )
        self.store_seconds = histogram(
            "gateway_store_operation_duration_seconds",
            "Time spent in session store operations.",
            ("operation",),
            buckets=STORE_BUCKETS,
        )
        self.store_errors = counter(
            "gateway_store_errors",
            "Session store operations that failed (not counting records not found).",
            ("operation", "code"),
        )
        self.refused = counter(
            "gateway_refused",
            "Connections closed and requests refused by the server's own limits.",
            ("reason",),
        )
        self.active_streams = Gauge(
            "gateway_active_streams",
            "Streamed responses in flight.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.open_websockets = Gauge(
            "gateway_open_websockets",
            "WebSockets open on /v1/responses.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )

    def model_label(self, model: str) -> str:
        """``model``, or ``other`` once many distinct names were seen (clients choose them)."""
        if model in self._models:
            return model
        if len(self._models) >= MAX_MODEL_LABELS:
            return "other"
        self._models.add(model)
        return model

    def observe_usage(self, project: str, model: str, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        label = self.model_label(model)
        for kind, count in zip(TOKEN_KINDS, token_counts(usage), strict=True):
            if count:
                self.tokens.labels(project, label, kind).inc(count)

    def observe_prompt_cache(self, deployment: str, key: str, usage: dict[str, Any]) -> None:
        """Count a call's input tokens and those its provider read from the cache."""
        input_tokens, _, cached, _ = token_counts(usage)
        if input_tokens:
            self.prompt_cache_tokens.labels(deployment, key, "input").inc(input_tokens)
            self.prompt_cache_tokens.labels(deployment, key, "cached").inc(cached)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        if os.environ.get(MULTIPROCESS_ENV):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def share_between_processes(directory: str) -> None:
    """Make metrics created from now on write to ``directory`` (emptied first).

    Call it before the workers start and before any metric exists: prometheus_client
    picks its value class when imported, so it is picked again here.
    """
    os.environ[MULTIPROCESS_ENV] = directory
    for stale in Path(directory).glob("*.db"):
        stale.unlink()
    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def process_ended(pid: int) -> None:
    """Drop a finished worker's live gauges (its active streams)."""
    if os.environ.get(MULTIPROCESS_ENV):
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
