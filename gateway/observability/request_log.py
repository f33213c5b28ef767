"""Request ids and log lines: every log line of a request carries its id.

The request being served is kept in a context variable: the tasks a request starts (a
streamed turn's) copy it, so their log lines and the turn's figures reach its access log.
"""

from __future__ import annotations

import logging
import os
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from opentelemetry import trace

_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")


@dataclass
class RequestLog:
    """What the access log line of one request reports, filled in as the request runs."""

    request_id: str
    project: str | None = None
    key_id: str | None = None
    upstream: str | None = None  # the deployment that answered: ``provider/model``
    model: str | None = None
    usage: dict[str, Any] | None = None
    upstream_seconds: float | None = None
    edge: str | None = None  # the API the request came in by, when not Responses'

    def fields(self) -> dict[str, Any]:
        usage = self.usage or {}
        upstream_ms = None if self.upstream_seconds is None else self.upstream_seconds * 1000
        return {
            "project": self.project,
            "model": self.model,
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "upstream_ms": None if upstream_ms is None else round(upstream_ms, 2),
        }


@dataclass(slots=True)
class AccessLine:
    """A request's access log line, given to the logger as its message: its text and its
    fields are made only when a handler formats the record."""

    client: str
    method: str
    path: str
    status: int
    seconds: float
    log: RequestLog

    def __str__(self) -> str:
        extra = "".join(
            f" {name}={value}" for name, value in self.log.fields().items() if value is not None
        )
        return (
            f'{self.client} "{self.method} {self.path}" {self.status} '
            f"{self.seconds * 1000:.1f}ms{extra}"
        )

    def fields(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "duration_ms": round(self.seconds * 1000, 2),
            **self.log.fields(),
        }


CURRENT_REQUEST: ContextVar[RequestLog | None] = ContextVar("gateway_request", default=None)


def request_id_of(header: bytes | None) -> str:
    """The client's ``x-request-id`` when it is a sane token, else a fresh one."""
    if header:
        text = header.decode("latin-1")
        if _CLIENT_ID.match(text):
            return text
    return f"req_{os.urandom(16).hex()}"


def note_turn(
    project: str, model: str, usage: dict[str, Any] | None, upstream_seconds: float
) -> None:
    """Record a finished upstream call on the request being served, if any."""
    log = CURRENT_REQUEST.get()
    if log is not None:
        log.project = project
        log.model = model
        log.usage = usage
        log.upstream_seconds = upstream_seconds


def request_metadata(user: str | None) -> dict[str, Any]:
    """What a stored turn records of who made it: the end user the client named, the
    request id (``x-request-id``), the API key's id (``static:NAME`` or a managed key's)
    and the edge it came in by (``messages``, ``chat_completions``) when not Responses'."""
    metadata: dict[str, Any] = {"user": user} if user else {}
    log = CURRENT_REQUEST.get()
    if log is not None:
        metadata["request_id"] = log.request_id
        if log.edge is not None:
            metadata["edge"] = log.edge
        if log.key_id is not None:
            metadata["key_id"] = log.key_id
    return metadata


def note_upstream(deployment: str) -> None:
    """Name the deployment that answered the request being served (its
    ``x-gateway-upstream`` header); a later answer, after a retry, replaces it."""
    log = CURRENT_REQUEST.get()
    if log is not None:
        log.upstream = deployment


def note_failed_request(project: str, model: str | None) -> None:
    """Name the project and model of a request that failed after its body was read, so
    that its access line carries them as a finished turn's does (:func:`note_turn`)."""
    log = CURRENT_REQUEST.get()
    if log is not None:
        log.project = log.project or project
        log.model = log.model or model


class RequestIdFilter(logging.Filter):
    """Gives every record a ``request_id`` (``-`` outside requests) and, while a span is
    recorded, its ``trace_id`` and ``span_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        log = CURRENT_REQUEST.get()
        record.request_id = log.request_id if log is not None else "-"
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            record.trace_id = f"{context.trace_id:032x}"
            record.span_id = f"{context.span_id:016x}"
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line; an access line adds its ``fields``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        if (trace_id := getattr(record, "trace_id", None)) is not None:
            line["trace_id"] = trace_id
            line["span_id"] = getattr(record, "span_id", None)
        if isinstance(record.msg, AccessLine):
            line.update(record.msg.fields())
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


class TextFormatter(logging.Formatter):
    """:data:`TEXT_FORMAT`, written out directly, with the date made once a second: an
    access line per request pays for each formatted record."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second = -1
        self._date = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        if second != self._second:
            self._date = time.strftime("%Y-%m-%d %H:%M:%S", self.converter(second))
            self._second = second
        return f"{self._date},{int(record.msecs):03d}"

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)
        record.message = record.getMessage()
        request_id = getattr(record, "request_id", "-")
        if (trace_id := getattr(record, "trace_id", None)) is not None:
            request_id = (
                f"{request_id} trace_id={trace_id} span_id={getattr(record, 'span_id', '-')}"
            )
        return (
            f"{self.formatTime(record)} {record.levelname} {record.name} [{request_id}] "
            f"{record.message}"
        )


def configure_logging(level: str, log_format: Literal["text", "json"]) -> None:
    """Send every logger's records, uvicorn's included, to stderr in ``log_format``.

    Records skip what no line prints: the caller's source line, thread and process (the
    logging module's documented switches; an access line per request pays for each).
    """
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # no findCaller
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    formatter = JSONFormatter() if log_format == "json" else TextFormatter()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The MCP SDK's HTTP clients log each request's URL at INFO, and a URL may carry a
    # token in its query: only their warnings.
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)
