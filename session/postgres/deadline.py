"""Calls to PostgreSQL that give up at a deadline, even when the network answers nothing."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ..errors import StoreUnavailable


class HasDeadline(Protocol):
    deadline: float  # seconds a call may take: connect, statement, and a margin


S = TypeVar("S", bound=HasDeadline)
P = ParamSpec("P")
T = TypeVar("T")


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


def bounded(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """Give up on a call after the store's deadline, without waiting for its clean-up.

    A stalled network answers nothing, not even the cancellation of a query or the
    rollback that follows it: those finish (or fail) in the background while the
    caller already has its :class:`StoreUnavailable`.
    """

    @functools.wraps(method)
    async def call(store: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        task = asyncio.ensure_future(method(store, *args, **kwargs))
        try:
            done, _ = await asyncio.wait({task}, timeout=store.deadline)
        except asyncio.CancelledError:
            task.cancel()
            task.add_done_callback(_consume)
            raise
        if task in done:
            return task.result()
        task.cancel()
        task.add_done_callback(_consume)
        raise StoreUnavailable(
            f"The session database did not answer within {store.deadline:g} seconds."
        )

    return call
