"""A session store that times each operation and counts its failures; its turns' saves
and history reads are spans of the turn's trace when tracing is on."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from session import InvalidData, SaveConflict, SessionError, SessionStore, StoreUnavailable

from ..tracing import NO_TRACER, Tracer
from .metrics import Metrics

# Failures an operator watches; "not found" and chain errors are answers, not failures.
_FAILURES = (StoreUnavailable, InvalidData, SaveConflict)
# The operations a turn's trace shows, by span name.
TRACED = {
    "save": "store save",
    "resolve_chain": "resolve history",
    "conversation_items": "resolve history",
}


class MeasuredStore:
    """Wraps every coroutine method of a store; other attributes pass through."""

    def __init__(self, store: SessionStore, metrics: Metrics, tracer: Tracer = NO_TRACER) -> None:
        self.inner = store
        self._metrics = metrics
        self._tracer = tracer

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute
        measured = self._measure(name, attribute)
        if self._tracer.enabled and name in TRACED:
            measured = self._traced(name, measured)
        setattr(self, name, measured)  # found directly from now on
        return measured

    def _measure(
        self, name: str, method: Callable[..., Coroutine[Any, Any, Any]]
    ) -> Callable[..., Coroutine[Any, Any, Any]]:
        seconds = self._metrics.store_seconds.labels(name)
        errors = self._metrics.store_errors

        async def measured(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await method(*args, **kwargs)
            except _FAILURES as error:
                errors.labels(name, error.code).inc()
                raise
            except SessionError:
                raise
            except Exception:
                errors.labels(name, "unexpected").inc()
                raise
            finally:
                seconds.observe(time.perf_counter() - start)

        return measured

    def _traced(
        self, name: str, method: Callable[..., Coroutine[Any, Any, Any]]
    ) -> Callable[..., Coroutine[Any, Any, Any]]:
        span_name, tracer = TRACED[name], self._tracer
        system = type(self.inner).__name__

        async def traced(*args: Any, **kwargs: Any) -> Any:
            with tracer.span(span_name, attributes={"db.operation.name": name}) as span:
                span.set_attribute("gateway.store", system)
                answer = await method(*args, **kwargs)
                if name == "save" and args:
                    span.set_attribute("gen_ai.response.id", args[0].id)
                    span.set_attribute("gateway.status", args[0].status)
                elif name == "resolve_chain":
                    span.set_attribute("gateway.history.depth", len(answer.turns))
                    span.set_attribute("gateway.history.items", len(answer.items))
                    span.set_attribute("gateway.history.source", answer.source)
                    span.set_attribute("gateway.history.cache_hit", answer.source != "store")
                else:
                    span.set_attribute("gateway.history.items", len(answer))
                return answer

        return traced


def measured(store: SessionStore, metrics: Metrics, tracer: Tracer = NO_TRACER) -> SessionStore:
    """``store``, measured (and traced when ``tracer`` is on)."""
    return cast(SessionStore, MeasuredStore(store, metrics, tracer))
