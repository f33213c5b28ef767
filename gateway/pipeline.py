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
    """A validated request: the record to store and the stateless request to send."""

    record: StoredResponse
    store: bool
    upstream: Upstream
    upstream_request: Item


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

    async def prepare(self, body: CreateResponseBody, project: str) -> Turn:
        """Route the model and resolve the chain; nothing is stored yet."""
        route = self.config.route(body.model)
        if route is None:
            raise not_found(
                f"The model '{body.model}' does not exist or is not routed by this gateway.",
                param="model",
                code="model_not_found",
            )
        history: list[Item] = []
        if body.previous_response_id is not None:
            try:
                chain = await self.store.resolve_chain(project, body.previous_response_id)
            except SessionError as error:
                raise previous_response_error(error) from None
            history = chain.items
        snapshot = RequestSnapshot.model_validate(
            body.model_dump(include=set(RequestSnapshot.model_fields))
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
            for key, value in {**body.extra_fields(), **body.model_dump()}.items()
            if key not in _GATEWAY_FIELDS and value is not None and key != "metadata"
        }
        upstream_request["model"] = route.upstream_model
        upstream_request["input"] = [*history, *snapshot.input]
        upstream = build_upstream(route, self._client)
        return Turn(record, body.store, upstream, upstream_request)

    async def _save(self, record: StoredResponse, *, overwrite: bool = False) -> None:
        await self.store.save(
            record,
            overwrite=overwrite,
            expected_previous_response_id=record.previous_response_id,
        )

    async def respond(self, turn: Turn) -> dict[str, Any]:
        """Run a non-streamed turn and return its response object."""
        result: TurnResult | None = None
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
        if turn.store:
            await self._save(record)
        return response_object(record, store=turn.store)

    async def open_stream(self, turn: Turn) -> AsyncIterator[bytes]:
        """Start a streamed turn; return its SSE bytes.

        The upstream is called before the first byte, so its refusals are plain HTTP
        errors. The turn then runs in its own task: a client that disconnects does not
        stop it, and the stored turn stays valid.
        """
        stack = AsyncExitStack()
        events = await stack.enter_async_context(
            turn.upstream.open(turn.upstream_request, stream=True)
        )
        try:
            if turn.store:
                await self._save(turn.record)
        except BaseException:
            await stack.aclose()
            raise
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        task = asyncio.create_task(self._pump(turn, stack, events, queue))
        self._streams.add(task)
        task.add_done_callback(self._streams.discard)
        return self._drain(queue)

    @staticmethod
    async def _drain(queue: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
        while (chunk := await queue.get()) is not None:
            yield chunk

    async def _pump(
        self,
        turn: Turn,
        stack: AsyncExitStack,
        events: UpstreamStream,
        queue: asyncio.Queue[bytes | None],
    ) -> None:
        sequence = 0

        def emit(event: Event) -> None:
            nonlocal sequence
            queue.put_nowait(sse({**event, "sequence_number": sequence}))
            sequence += 1

        record = turn.record
        started = response_object(record, store=turn.store)
        emit({"type": "response.created", "response": started})
        emit({"type": "response.in_progress", "response": started})
        result: TurnResult | None = None
        try:
            async with stack:
                async for event in events:
                    if isinstance(event, TurnResult):
                        result = event
                    else:
                        emit(event)
        except Exception:
            logger.exception("stream of %s failed", record.id)
        if result is None:
            result = failed_result("The response could not be completed.")
        record = finished(record, result)
        try:
            if turn.store:
                await self._save(record, overwrite=True)
        except SessionError:
            logger.exception("could not store the end of %s", record.id)
        emit(
            {
                "type": _TERMINAL_EVENTS[result.status],
                "response": response_object(record, store=turn.store),
            }
        )
        queue.put_nowait(None)

    async def wait_for_streams(self) -> None:
        """Let streams in flight finish (and be stored) before shutting down."""
        if self._streams:
            await asyncio.gather(*self._streams, return_exceptions=True)
