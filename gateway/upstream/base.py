"""The interface of an upstream adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from .results import Event, Item, TurnResult

UpstreamStream = AsyncIterator[Event | TurnResult]
"""Responses events without sequence numbers, ended by exactly one :class:`TurnResult`."""


@dataclass(frozen=True)
class Capabilities:
    """What an upstream does besides answering; ``None`` where its wire cannot.

    ``count_input_tokens`` takes a stateless request and answers its input tokens;
    ``compact`` takes one and answers the compaction object (``output``, ``usage``, ...).
    """

    count_input_tokens: Callable[[Item], Awaitable[int]] | None = None
    compact: Callable[[Item], Awaitable[Item]] | None = None


NONE = Capabilities()


class Upstream(Protocol):
    capabilities: Capabilities

    def open(self, request: Item, *, stream: bool) -> AbstractAsyncContextManager[UpstreamStream]:
        """Send a stateless Responses request (full ``input``, upstream ``model``).

        Entering the context sends the request and raises ``UpstreamError`` (or
        ``UnsupportedInput`` for input the wire cannot express) before any event; for a
        non-streamed request it also reads and checks the whole answer, and the stream
        may hold its :class:`TurnResult` alone. Failures after that end the stream with a
        failed :class:`TurnResult`.
        """
        ...


class Wrapping:
    """An upstream around another, ``inner``: it offers ``inner``'s capabilities unless it
    sets its own, and changes what ``open`` does."""

    def __init__(self, inner: Upstream) -> None:
        self._inner = inner
        self.capabilities: Capabilities = inner.capabilities


class Replay:
    """An answer already complete (non-streamed) as the stream adapters yield.

    A plain iterator rather than an async generator: every non-streamed turn makes one,
    and an async generator costs a registration with the event loop.
    """

    def __init__(self, events: list[Event], result: TurnResult) -> None:
        self._items: Iterator[Event | TurnResult] = iter([*events, result])

    def __aiter__(self) -> Replay:
        return self

    async def __anext__(self) -> Event | TurnResult:
        try:
            return next(self._items)
        except StopIteration:
            raise StopAsyncIteration from None
