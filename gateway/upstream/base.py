"""The interface of an upstream adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from .results import Event, Item, TurnResult

UpstreamStream = AsyncIterator[Event | TurnResult]
"""Responses events without sequence numbers, ended by exactly one :class:`TurnResult`."""


class Upstream(Protocol):
    def open(self, request: Item, *, stream: bool) -> AbstractAsyncContextManager[UpstreamStream]:
        """Send a stateless Responses request (full ``input``, upstream ``model``).

        Entering the context sends the request and raises ``UpstreamError`` (or
        ``UnsupportedInput`` for input the wire cannot express) before any event; for a
        non-streamed request it also reads and checks the whole answer. Failures after
        that end the stream with a failed :class:`TurnResult`.
        """
        ...


async def replay(events: list[Event], result: TurnResult) -> UpstreamStream:
    """An answer already complete (non-streamed) as the stream adapters yield."""
    for event in events:
        yield event
    yield result
