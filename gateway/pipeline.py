"""One turn: validate -> resolve context from the session -> call upstream -> build -> save."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import httpx

from session import (
    ConversationNotFound,
    Item,
    RequestSnapshot,
    ResponseSnapshot,
    SessionError,
    SessionStore,
    StoredResponse,
    new_id,
)

from .config import GatewayConfig
from .errors import APIError, not_found, previous_response_error
from .locks import KeyedLocks
from .request_body import CreateResponseBody
from .response_object import response_object
from .upstream import Event, TurnResult, Upstream, UpstreamStream, build_upstream
from .upstream.results import failed_result

logger = logging.getLogger("gateway.pipeline")

# Top-level fields the gateway consumes itself and never sends upstream.
_GATEWAY_FIELDS = frozenset(
    {"previous_response_id", "conversation", "store", "stream", "stream_options", "background"}
)
_TERMINAL_EVENTS = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}


@dataclass
class Turn:
    """A validated request: the record to store and the stateless request to send.

    ``stack`` holds what the turn keeps until it ends (its conversation's lock, then
    the upstream connection).
    """

    record: StoredResponse
    store: bool
    upstream: Upstream
    upstream_request: Item
    stack: AsyncExitStack


def sse(event: Event) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def finished(record: StoredResponse, result: TurnResult) -> StoredResponse:
    return record.model_copy(
        update={
            "status": result.status,
            "completed_at": time.time(),
            "response": ResponseSnapshot(
                output=result.output,
                output_text=result.output_text,
                usage=result.usage,
                error=result.error,
                incomplete_details=result.incomplete_details,
            ),
        }
    )


class ResponsesService:
    """Runs turns against the configured upstreams and keeps them in the session store."""

    def __init__(
        self, store: SessionStore, config: GatewayConfig, client: httpx.AsyncClient
    ) -> None:
        self.store = store
        self.config = config
        self._client = client
        self._streams: set[asyncio.Task[None]] = set()
        self._conversations = KeyedLocks()

    async def _history(self, body: CreateResponseBody, project: str) -> list[Item]:
        """The items that precede this request's input: its chain or its conversation."""
        try:
            if body.previous_response_id is not None:
                chain = await self.store.resolve_chain(project, body.previous_response_id)
                return chain.items
            if body.conversation_id is not None:
                return await self.store.conversation_items(project, body.conversation_id)
        except ConversationNotFound as error:
            raise not_found(error.message, param="conversation", code=error.code) from None
        except SessionError as error:
            raise previous_response_error(error) from None
        return []

    async def prepare(self, body: CreateResponseBody, project: str) -> Turn:
        """Route the model and resolve the context; nothing is stored yet.

        Turns on one conversation are serialised: the next reads the context only once
        the previous one has appended its items.
        """
        route = self.config.route(body.model)
        if route is None:
            raise not_found(
                f"The model '{body.model}' does not exist or is not routed by this gateway.",
                param="model",
                code="model_not_found",
            )
        stack = AsyncExitStack()
        if body.conversation_id is not None:
            await stack.enter_async_context(self._conversations.hold(body.conversation_id))
        try:
            history = await self._history(body, project)
        except BaseException:
            await stack.aclose()
            raise
        fields = body.model_dump()
        snapshot = RequestSnapshot.model_validate(
            {key: fields[key] for key in RequestSnapshot.model_fields}
        )
        record = StoredResponse(
            id=new_id("resp"),
            previous_response_id=body.previous_response_id,
            conversation_id=body.conversation_id,
            project=project,
            status="in_progress",
            request=snapshot,
            metadata={"user": body.user} if body.user else {},
        )
        upstream_request = {
            key: value
            for key, value in {**body.extra_fields(), **fields}.items()
            if key not in _GATEWAY_FIELDS and value is not None and key != "metadata"
        }
        upstream_request["model"] = route.upstream_model
        upstream_request["input"] = [*history, *snapshot.input]
        upstream = build_upstream(route, self._client)
        return Turn(record, body.store, upstream, upstream_request, stack)

    async def _save_started(self, turn: Turn) -> None:
        if turn.store:
            await self.store.save(
                turn.record, expected_previous_response_id=turn.record.previous_response_id
            )

    async def _save_finished(self, turn: Turn, record: StoredResponse, *, started: bool) -> None:
        """Store the finished turn and, if it succeeded, append it to its conversation."""
        appended = None
        if record.conversation_id is not None and record.status != "failed":
            appended = [*record.request.input, *record.response.output]
        if turn.store:
            await self.store.save(
                record,
                overwrite=started,
                expected_previous_response_id=record.previous_response_id,
                conversation_items=appended,
            )
        elif appended is not None and record.conversation_id is not None:
            await self.store.append_items(record.project, record.conversation_id, appended)

    async def respond(self, turn: Turn) -> dict[str, Any]:
        """Run a non-streamed turn and return its response object."""
        result: TurnResult | None = None
        async with turn.stack:
            async with turn.upstream.open(turn.upstream_request, stream=False) as events:
                async for event in events:
                    if isinstance(event, TurnResult):
                        result = event
            if result is None or result.status == "failed":
                message = (result.error or {}).get("message") if result else None
                raise APIError(
                    502,
                    message or "The upstream provider returned no result.",
                    type="server_error",
                    code="upstream_error",
                )
            record = finished(turn.record, result)
            await self._save_finished(turn, record, started=False)
        return response_object(record, store=turn.store)

    async def open_stream(self, turn: Turn) -> AsyncIterator[bytes]:
        """Start a streamed turn; return its SSE bytes.

        The upstream is called before the first byte, so its refusals are plain HTTP
        errors. The turn then runs in its own task: a client that disconnects does not
        stop it, and the stored turn stays valid.
        """
        try:
            events = await turn.stack.enter_async_context(
                turn.upstream.open(turn.upstream_request, stream=True)
            )
            await self._save_started(turn)
        except BaseException:
            await turn.stack.aclose()
            raise
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        task = asyncio.create_task(self._pump(turn, events, queue))
        self._streams.add(task)
        task.add_done_callback(self._streams.discard)
        return self._drain(queue)

    @staticmethod
    async def _drain(queue: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
        while (chunk := await queue.get()) is not None:
            yield chunk

    async def _pump(
        self, turn: Turn, events: UpstreamStream, queue: asyncio.Queue[bytes | None]
    ) -> None:
        sequence = 0

        def emit(event: Event) -> None:
            nonlocal sequence
            queue.put_nowait(sse({**event, "sequence_number": sequence}))
            sequence += 1

        started = response_object(turn.record, store=turn.store)
        emit({"type": "response.created", "response": started})
        emit({"type": "response.in_progress", "response": started})
        result = failed_result("The response could not be completed.")
        record = finished(turn.record, result)
        try:
            async with turn.stack:
                try:
                    async for event in events:
                        if isinstance(event, TurnResult):
                            result = event
                        else:
                            emit(event)
                except Exception:
                    logger.exception("the stream of %s broke", turn.record.id)
                record = finished(turn.record, result)
                await self._save_finished(turn, record, started=True)
        except Exception:
            logger.exception("the end of streamed response %s was not stored", turn.record.id)
        terminal = {"type": _TERMINAL_EVENTS[result.status]}
        emit({**terminal, "response": response_object(record, store=turn.store)})
        queue.put_nowait(None)

    async def wait_for_streams(self) -> None:
        """Let streams in flight finish (and be stored) before shutting down."""
        if self._streams:
            await asyncio.gather(*self._streams, return_exceptions=True)
