"""A provider's stream, translated, ends with exactly one result whatever happens to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import aiohttp

from .base import UpstreamStream
from .errors import MalformedAnswer, UpstreamError
from .results import Event, TurnResult
from .transport.failures import describe_stream_failure


class ReportedError(Exception):
    """An error the provider reported inside a stream that had started; the message is
    what the client is told."""


class Ending(Protocol):
    def finish(self) -> tuple[list[Event], TurnResult]: ...

    def fail(self, message: str) -> tuple[list[Event], TurnResult]: ...


async def ended(name: str, events: AsyncIterator[Event], translator: Ending) -> UpstreamStream:
    """``events`` (which raise ``EOFError`` for an answer cut short), then the events that
    close the output and the result: failed, saying why, when anything went wrong."""
    try:
        async for event in events:
            yield event
    except ReportedError as error:
        closing, result = translator.fail(str(error))
    except EOFError:
        closing, result = translator.fail(
            f"The answer from upstream provider '{name}' ended before it was complete."
        )
    except MalformedAnswer as error:
        closing, result = translator.fail(
            f"The upstream provider '{name}' sent an invalid stream event: {error}."
        )
    except (aiohttp.ClientError, TimeoutError, UpstreamError, ValueError) as error:
        closing, result = translator.fail(describe_stream_failure(name, error))
    else:
        closing, result = translator.finish()
    for event in closing:
        yield event
    yield result
