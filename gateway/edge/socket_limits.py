"""How many WebSockets are open in this process, in all, per project and per key.

A socket holds a connection for up to an hour, mostly idle: it is not counted against
``server.max_connections`` (requests in flight), but against caps of its own, checked
before the upgrade is accepted so that a refusal is an HTTP answer the client can read.
One key (or one project) past its cap gets 429; the process past ``server.max_websockets``
gets 503. The counts are this process's: with ``server.workers: N`` each process keeps its
own.
"""

from __future__ import annotations

from collections import Counter

from ..config_sections import ServerSettings
from ..errors import APIError, server_error
from ..observability.metrics import Metrics
from .errors import RETRY_AFTER_SECONDS


class OpenSockets:
    """The sockets open now, in all, by project and by key."""

    def __init__(self, settings: ServerSettings, metrics: Metrics | None = None) -> None:
        self._most = settings.max_websockets
        self._per_project = settings.max_websockets_per_project
        self._per_key = settings.max_websockets_per_key
        self._metrics = metrics
        self._projects: Counter[str] = Counter()
        self._keys: Counter[str] = Counter()
        self.total = 0

    def open(self, project: str | None, key_id: str | None) -> None:
        """Count one more socket of ``project`` and ``key_id`` (``None``: no key, as with
        ``auth.mode: none``, where only the process's cap applies), or raise the
        :class:`APIError` of the cap it would pass. :meth:`close` gives its place back."""
        self._check(project, key_id)
        self.total += 1
        if project is not None:
            self._projects[project] += 1
        if key_id is not None:
            self._keys[key_id] += 1
        self._gauge(1)

    def close(self, project: str | None, key_id: str | None) -> None:
        """The socket :meth:`open` counted is closed."""
        self.total -= 1
        if project is not None:
            _decrement(self._projects, project)
        if key_id is not None:
            _decrement(self._keys, key_id)
        self._gauge(-1)

    def _check(self, project: str | None, key_id: str | None) -> None:
        if key_id is not None and self._keys[key_id] >= self._per_key:
            self._refused("websockets_per_key")
            raise _too_many(f"this API key has {self._per_key} WebSockets open")
        if project is not None and self._projects[project] >= self._per_project:
            self._refused("websockets_per_project")
            raise _too_many(f"this project has {self._per_project} WebSockets open")
        if self.total >= self._most:
            self._refused("websockets")
            raise server_error(
                503,
                f"The gateway has {self._most} WebSockets open, its limit. "
                "Try again shortly, or use HTTP requests meanwhile.",
                "server_busy",
                RETRY_AFTER_SECONDS,
            )

    def _refused(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.refused.labels(reason).inc()

    def _gauge(self, change: int) -> None:
        if self._metrics is not None:
            self._metrics.open_websockets.inc(change)


def _too_many(what: str) -> APIError:
    return APIError(
        429,
        f"Too many WebSockets: {what}, its limit. Close one, or use HTTP requests meanwhile.",
        type="requests",
        code="too_many_websockets",
        headers={"retry-after": RETRY_AFTER_SECONDS},
    )


def _decrement(counts: Counter[str], name: str) -> None:
    counts[name] -= 1
    if counts[name] <= 0:
        del counts[name]
