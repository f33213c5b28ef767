"""A real OTLP/HTTP trace receiver: ``POST /v1/traces`` bodies decoded as the protobuf
``ExportTraceServiceRequest`` (``opentelemetry-proto``), their spans kept for the tests to
read as a tree. ``hold`` makes it answer only once released (a slow collector)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .servers import serve

SPAN_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass
class ReceivedSpan:
    """One exported span, its ids as hex."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str]]  # (trace id, span id)
    status: int  # 0 unset, 1 ok, 2 error
    resource: dict[str, Any]
    start: int
    end: int


@dataclass
class Receiver:
    url: str = ""
    bodies: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    spans: list[ReceivedSpan] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)  # spans per export request
    hold: threading.Event | None = None  # set: answer; unset: wait (a slow collector)

    def by_name(self, prefix: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def one(self, prefix: str) -> ReceivedSpan:
        found = self.by_name(prefix)
        assert len(found) == 1, [span.name for span in self.spans]
        return found[0]

    def children(self, parent: ReceivedSpan) -> list[ReceivedSpan]:
        """``parent``'s children, in the order they started."""
        found = [s for s in self.spans if s.parent_id == parent.span_id]
        return sorted(found, key=lambda span: span.start)

    def keep(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.batch_sizes.append(
            sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        )
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            span.name,
                            SPAN_KINDS.get(span.kind, "unspecified"),
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            {a.key: _value(a.value) for a in span.attributes},
                            [
                                (e.name, {a.key: _value(a.value) for a in e.attributes})
                                for e in span.events
                            ],
                            [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                            span.status.code,
                            resource,
                            span.start_time_unix_nano,
                            span.end_time_unix_nano,
                        )
                    )


def receiver_app(receiver: Receiver) -> Starlette:
    async def traces(request: Request) -> Response:
        body = await request.body()
        receiver.bodies.append(body)
        receiver.headers.append(dict(request.headers))
        receiver.keep(body)
        if receiver.hold is not None:
            await asyncio.to_thread(receiver.hold.wait)
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])


@contextmanager
def otlp_receiver(*, slow: bool = False) -> Iterator[Receiver]:
    """A receiver on a loopback port; ``slow``: it answers only once the block ends."""
    receiver = Receiver(hold=threading.Event() if slow else None)
    with serve(receiver_app(receiver)) as url:
        receiver.url = url
        try:
            yield receiver
        finally:
            if receiver.hold is not None:
                receiver.hold.set()
