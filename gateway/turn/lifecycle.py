"""A turn's lifecycle: the statuses it goes through, how each is reached, how each is saved.

A turn is stored ``in_progress`` (``queued`` first in the background) before its upstream
answers, then once more when it ends: ``completed``, ``incomplete``, ``failed`` or
``cancelled``. A finished turn is never overwritten (the store refuses it), so whichever
of two writers comes second, a cancel or the turn itself, finds its save refused.
Streaming, background turns and WebSocket mode run turns through :class:`TurnRunner`.
"""

from __future__ import annotations

import logging
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from opentelemetry.trace import INVALID_SPAN, Span

from session import (
    Conversations,
    Item,
    ResponseSnapshot,
    SessionError,
    SessionStore,
    StoredResponse,
    Turns,
    UnstoredTurn,
    Usage,
    trusted,
)

from ..api.request_body import CreateResponseBody
from ..observability.metrics import Metrics
from ..tracing import Timeline, begin, finish
from ..upstream import TurnResult, Upstream, UpstreamStream
from .spending import Spending
from .turn_spans import record_finished

logger = logging.getLogger(__name__)

CONTINUABLE = frozenset({"completed", "incomplete"})
UNFINISHED = frozenset({"queued", "in_progress"})


@dataclass
class Turn:
    """A validated request: the record to store and the stateless request to send."""

    record: StoredResponse
    store: bool
    upstream: Upstream
    upstream_request: Item
    max_stream_seconds: float
    provider: str
    history_count: int  # how many of ``upstream_request["input"]`` come before this turn's own
    truncation: bool  # ``truncation: "auto"``: the history may be cut to fit
    spending: Spending | None = None  # counts what the turn cost its API key
    span: Span = INVALID_SPAN  # the turn's, when traced
    metrics: Metrics | None = None  # counts the finished turn
    timeline: Timeline | None = None  # its steps, stored with it


class TurnRunner(Protocol):
    """What runs a turn: its context, its upstream call and the store it is saved in."""

    store: SessionStore

    def turn(
        self, body: CreateResponseBody, project: str, history: list[Item] | None = None
    ) -> AbstractAsyncContextManager[Turn]:
        """Route the model and resolve the context; the turn holds them until it ends."""
        ...

    def open_upstream(
        self, turn: Turn, *, stream: bool
    ) -> AbstractAsyncContextManager[UpstreamStream]:
        """The turn's upstream call."""
        ...


class TurnSaves(Turns, Conversations, Usage, Protocol):
    """Where a finished turn is saved: with its conversation's new items, or, for a turn
    that is not stored, its figures for usage."""


def with_status(record: StoredResponse, status: str) -> StoredResponse:
    """``record`` moved to ``queued``, ``in_progress`` or ``cancelled``."""
    if status == "cancelled":
        return record.model_copy(update={"status": status, "completed_at": time.time()})
    return record.model_copy(update={"status": status})


def finished(record: StoredResponse, result: TurnResult) -> StoredResponse:
    """``record`` ended as ``result`` says (with how it was routed, when it was)."""
    metadata = record.metadata
    if result.route is not None:
        metadata = {**metadata, "route": result.route}
    if result.cost_usd is not None:
        metadata = {**metadata, "cost_usd": result.cost_usd, "cost_source": result.cost_source}
    if result.service_tier is not None:
        metadata = {**metadata, "service_tier": result.service_tier}
    if result.first_token_at is not None:
        waited = max(0.0, result.first_token_at - record.created_at)
        metadata = {**metadata, "time_to_first_token_seconds": round(waited, 4)}
    return record.model_copy(
        update={
            "metadata": metadata,
            "status": result.status,
            "completed_at": time.time(),
            "response": trusted(
                ResponseSnapshot,
                {
                    "output": result.output,
                    "usage": result.usage,
                    "error": result.error,
                    "incomplete_details": result.incomplete_details,
                },
            ),
        }
    )


async def save_started(store: Turns, turn: Turn) -> None:
    """Store the turn as it starts (``in_progress``, or ``queued``), unless ``store: false``."""
    if turn.store:
        step = begin("save", "in_progress")
        await store.save(turn.record)
        finish(step)


async def save_finished(
    store: TurnSaves, turn: Turn, record: StoredResponse, *, started: bool
) -> None:
    """Store the finished turn (over its start when ``started``) and, if it succeeded,
    append its items to its conversation in the same transaction.

    A turn sent with ``store: false`` keeps its figures only (see
    :class:`session.UnstoredTurn`), so that usage and cost count it once, as a stored
    turn is counted from its record.
    """
    record_finished(turn.span, record)
    begin("save", record.status)  # ends as the record is written: stored without its end
    if turn.timeline is not None:
        record = record.model_copy(update={"timeline": turn.timeline.stored()})
    appended = None
    if record.conversation_id is not None and record.status in CONTINUABLE:
        appended = [*record.request.input, *record.response.output]
    if turn.store:
        await store.save(record, overwrite=started, conversation_items=appended)
    else:
        if appended is not None and record.conversation_id is not None:
            await store.append_items(record.project, record.conversation_id, appended)
        try:
            await store.record_unstored(UnstoredTurn.of(record, turn.provider))
        except SessionError as error:  # the answer is not lost for its figures
            logger.warning("the usage of %s was not kept: %s", record.id, error.message)
    if turn.spending is not None:
        await turn.spending.record(record)
    if turn.metrics is not None:
        label = turn.metrics.model_label(record.request.model)
        turn.metrics.turns.labels(record.project, label, record.status).inc()
