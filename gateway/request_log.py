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

_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")


@dataclass
class RequestLog:
    """What the access log line of one request reports, filled in as the request runs."""

    request_id: str
    project: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    upstream_seconds: float | None = None

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


class RequestIdFilter(logging.Filter):
    """Gives every record a ``request_id`` (``-`` outside requests)."""

    def filter(self, record: logging.LogRecord) -> bool:
        log = CURRENT_REQUEST.get()
        record.request_id = log.request_id if log is not None else "-"
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
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


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
    formatter = JSONFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
