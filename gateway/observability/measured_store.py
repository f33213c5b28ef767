"""A session store that times each operation and counts its failures."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from session import InvalidData, SaveConflict, SessionError, SessionStore, StoreUnavailable

from .metrics import Metrics

# Failures an operator watches; "not found" and chain errors are answers, not failures.
_FAILURES = (StoreUnavailable, InvalidData, SaveConflict)


class MeasuredStore:
    """Wraps every coroutine method of a store; other attributes pass through."""

    def __init__(self, store: SessionStore, metrics: Metrics) -> None:
        self.inner = store
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute
        measured = self._measure(name, attribute)
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


def measured(store: SessionStore, metrics: Metrics) -> SessionStore:
    return cast(SessionStore, MeasuredStore(store, metrics))
