"""The tracer provider: built in the app's lifespan from ``observability.otlp``, its spans
batched and exported over OTLP/HTTP by a thread of the SDK's, shut down at stop."""

from __future__ import annotations

import asyncio
import logging
from importlib.metadata import PackageNotFoundError, version

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from ..observability_settings import ObservabilitySettings, OtlpSettings
from .tracer import NO_TRACER, Tracer

logger = logging.getLogger(__name__)

PACKAGE = "responses-gateway"
SCHEDULE_DELAY_MILLIS = 1000
MAX_EXPORT_BATCH = 512


class Tracing:
    """The tracer of a running gateway and what it takes to stop it."""

    def __init__(
        self,
        tracer: Tracer,
        provider: TracerProvider | None = None,
        exporter: OTLPSpanExporter | None = None,
        stop_seconds: float = 0.0,
    ) -> None:
        self.tracer = tracer
        self._provider = provider
        self._exporter = exporter
        self._stop_seconds = stop_seconds

    async def shutdown(self) -> None:
        """Export what is queued for at most one export's time-out (a collector that is
        down does not hold the stop up for every batch), then stop; in a thread, as the
        SDK's shutdown blocks."""
        if self._provider is None or self._exporter is None:
            return
        stopped = asyncio.ensure_future(asyncio.to_thread(self._provider.shutdown))
        try:
            await asyncio.wait_for(asyncio.shield(stopped), self._stop_seconds)
        except TimeoutError:
            logger.warning("traces still queued at stop are dropped: the collector is slow")
            self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the rest fail at once
            await stopped


def _version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


def provider_of(otlp: OtlpSettings) -> tuple[TracerProvider, OTLPSpanExporter]:
    """A tracer provider exporting to ``otlp.endpoint``, sampling ``sampling_ratio`` of the
    traces no client started (a client's sampled flag is honoured)."""
    attributes: dict[str, str] = {"service.version": _version(), **otlp.resource_attributes}
    attributes["service.name"] = otlp.service_name
    provider = TracerProvider(
        resource=Resource.create(attributes),
        sampler=ParentBased(TraceIdRatioBased(otlp.sampling_ratio)),
    )
    exporter = OTLPSpanExporter(
        endpoint=otlp.traces_url(),
        headers=dict(otlp.headers),
        timeout=otlp.export_timeout_seconds,
    )
    processor = BatchSpanProcessor(
        exporter,
        max_queue_size=otlp.max_queue_size,
        schedule_delay_millis=SCHEDULE_DELAY_MILLIS,
        max_export_batch_size=min(MAX_EXPORT_BATCH, otlp.max_queue_size),
        export_timeout_millis=otlp.export_timeout_seconds * 1000,
    )
    provider.add_span_processor(processor)
    return provider, exporter


def start_tracing(settings: ObservabilitySettings) -> Tracing:
    """The gateway's tracing: off (:data:`NO_TRACER`) without ``otlp``, else a provider of
    its own (never the process-wide global one, so that apps in one process stay apart)."""
    otlp = settings.otlp
    if otlp is None:
        return Tracing(NO_TRACER)
    provider, exporter = provider_of(otlp)
    tracer = Tracer(
        provider.get_tracer(PACKAGE, _version()),
        capture_content=otlp.capture_content,
        max_content_chars=otlp.max_content_chars,
    )
    logger.info("traces go to %s (sampling %g)", otlp.traces_url(), otlp.sampling_ratio)
    return Tracing(tracer, provider, exporter, otlp.export_timeout_seconds)
