"""The service that runs turns: it resolves a turn's context (a chain or a conversation),
has :mod:`gateway.turn.upstreams` make its upstream, and makes the turn; a non-streamed one
it runs here,
a streamed or background one it hands to :mod:`gateway.turn.streaming` or
:mod:`gateway.turn.background`, which save it through :mod:`gateway.turn.lifecycle`."""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from session import (
    ConversationNotFound,
    Item,
    RequestSnapshot,
    ResponseNotFound,
    ResponseSnapshot,
    SaveConflict,
    SessionError,
    SessionStore,
    StoredResponse,
    UsageRecord,
    new_id,
    normalise_input,
    token_counts,
    trusted,
)
from session.shared import SharedLimits

from ..api.request_body import CreateResponseBody, InputTokensBody
from ..api.response_object import response_object
from ..config import GatewayConfig, Route
from ..context.compaction import compacting
from ..context.items import model_context
from ..context.tokens import TokenCounter
from ..context.truncation import stated_limit, truncated
from ..errors import APIError, invalid_request, not_found, previous_response_not_found, server_error
from ..observability.metrics import Metrics
from ..observability.request_log import request_metadata
from ..sealing import Sealer
from ..tracing import CURRENT_TIMELINE, NO_TRACER, Timeline, Tracer, begin, finish
from ..upstream import (
    ProviderClient,
    TurnResult,
    Upstream,
    UpstreamError,
)
from ..upstream.base import Replay, UpstreamStream
from ..upstream.errors import CONTEXT_LENGTH_EXCEEDED, is_context_overflow
from ..upstream.hosted.file_search import Searcher
from ..upstream.hosted.mcp import has_mcp, scrubbed
from ..upstream.hosted.support import check_tools
from ..upstream.hosted.wrap import with_hosted
from ..upstream.routing.affinity import Sticky
from ..upstream.transport.addresses import Resolver
from .background import BackgroundTurns
from .concurrency import KeyedLocks
from .context_requests import Context, compact, count_input_tokens
from .events import StreamEvent
from .lifecycle import UNFINISHED, Turn, finished, save_finished, with_status
from .spending import Spending
from .stateless import stateless_request
from .streaming import StreamedTurns
from .turn_spans import record_started, turn_span
from .upstreams import Upstreams

logger = logging.getLogger(__name__)


class ResponsesService:
    """Runs turns against the configured upstreams and keeps them in the session store."""

    def __init__(
        self,
        store: SessionStore,
        config: GatewayConfig,
        clients: Mapping[str, ProviderClient],
        metrics: Metrics,
        sealer: Sealer,
        shared: SharedLimits,
        spending: Spending,
        resolver: Resolver,
        *,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self.tracer = tracer
        self.store = store
        self.resolver = resolver  # answers the names of servers clients ask it to reach
        self.spending = spending
        self.config = config
        self.metrics = metrics
        self.sealer = sealer
        self._conversations = KeyedLocks()
        self.streams = StreamedTurns(metrics.active_streams)
        self.background = BackgroundTurns(config.providers)
        # Stored on each turn this instance runs; its heartbeat shows it is still running.
        self.instance_id = new_id("gw")
        self.token_counter = TokenCounter()
        self.upstreams = Upstreams(config, clients, metrics, sealer, shared, tracer)
        self.files: Searcher | None = None  # the vector stores ``file_search`` searches

    async def record_usage(self, project: str, model: str, usage: Item | None) -> None:
        """Keep the tokens of a call that no stored turn holds (a summary for a compaction)
        for ``gateway usage``; the answer it paid for is not lost if the store is down."""
        if not usage:
            return
        record = UsageRecord(project, model, time.time(), token_counts(usage))
        try:
            await self.store.record_usage(record)
        except SessionError as error:
            logger.warning("the usage of a compaction was not recorded: %s", error.message)

    async def compact(self, body: CreateResponseBody, project: str) -> dict[str, Any]:
        """``POST /v1/responses/compact``: the compacted window of the request's context."""
        route = self.upstreams.route(body.model)
        context, parent_route = await self._resolve(body, project)
        upstream = await self._context_upstream(body, body.model, project, context, parent_route)
        answer, usage = await compact(body, route, upstream, context, self.sealer, project)
        await self.record_usage(project, body.model, usage)
        return answer

    async def count_input_tokens(self, body: InputTokensBody, project: str) -> int:
        """``POST /v1/responses/input_tokens``: the tokens of the whole resolved context."""
        route = self.upstreams.route(body.model) if body.model is not None else None
        context, parent_route = await self._resolve(body, project)
        upstream = None
        if body.model is not None:
            upstream = await self._context_upstream(
                body, body.model, project, context, parent_route
            )
        return await count_input_tokens(body, route, upstream, context, self.token_counter)

    async def _context_upstream(
        self,
        body: CreateResponseBody,
        model: str,
        project: str,
        context: Context,
        parent_route: Item | None,
    ) -> Upstream:
        """Who compacts or counts a context: the model's deployments routed as its turns
        are (the chain's, conversation's or ``prompt_cache_key``'s place and the key that can
        replay its reasoning first; retries, cooldowns and fallbacks after)."""
        await self.upstreams.cooldowns.refresh()
        sticky = await self.upstreams.sticky(
            model,
            project,
            context.items,
            parent_route,
            body.conversation_id,
            body.prompt_cache_key,
        )
        return self.upstreams.routed(model, project, sticky)

    async def history(self, body: CreateResponseBody, project: str) -> list[Item]:
        """The items that precede this request's input: its chain or its conversation."""
        return (await self._history_and_types(body, project))[0]

    async def _resolve(self, body: CreateResponseBody, project: str) -> tuple[Context, Item | None]:
        """The request's context as a turn would see it, and how its chain's newest turn
        was routed."""
        history, _, parent_route = await self._history_and_types(body, project)
        own = normalise_input(body.input)
        return Context(
            history, own, model_context(self.sealer, project, history, own)
        ), parent_route

    async def _history_and_types(
        self, body: CreateResponseBody, project: str
    ) -> tuple[list[Item], frozenset[str | None] | None, Item | None]:
        """The history, the item types it holds when known without a scan, and for a
        chain how its newest turn was routed (``{}`` if that is not recorded)."""
        try:
            if body.previous_response_id is not None:
                step = begin("resolve", "chain")
                chain = await self.store.resolve_chain(project, body.previous_response_id)
                finish(step, depth=len(chain.turns), items=len(chain.items), source=chain.source)
                self.metrics.chain_depth.observe(len(chain.turns))
                return chain.items, chain.types, chain.turns[-1].route or {}
            if body.conversation_id is not None:
                step = begin("resolve", "conversation")
                items = await self.store.conversation_items(project, body.conversation_id)
                finish(step, items=len(items))
                return items, None, None
        except ConversationNotFound as error:
            raise not_found(error.message, param="conversation", code=error.code) from None
        except ResponseNotFound as error:  # other store errors reach the edge as they are
            raise previous_response_not_found(error) from None
        return [], frozenset(), None

    @asynccontextmanager
    async def turn(
        self, body: CreateResponseBody, project: str, history: list[Item] | None = None
    ) -> AsyncIterator[Turn]:
        """Route the model and resolve the context; the turn holds what it needs until it ends.

        Turns on one conversation are serialised: the next reads the context only once
        the previous one has appended its items.
        """
        route = self.upstreams.route(body.model)
        check_tools(body.tools, body.model, self.upstreams.providers(body.model), self.config)
        record_id = new_id("resp")
        async with AsyncExitStack() as stack:
            span = stack.enter_context(turn_span(self.tracer, body, project))
            timeline = Timeline()  # its steps add themselves, however deep
            stack.callback(CURRENT_TIMELINE.reset, CURRENT_TIMELINE.set(timeline))
            if body.conversation_id is not None:
                await stack.enter_async_context(self._conversations.hold(body.conversation_id))
            types, parent_route = None, None
            # A WebSocket holds its turns' history: their places are kept for the next turn
            # instead of being read from a stored parent.
            continued = (body.previous_response_id, record_id) if history is not None else None
            if history is None:  # else the caller resolved it (a WebSocket's last response)
                history, types, parent_route = await self._history_and_types(body, project)
            # The body is validated already: the records are built without validating again.
            fields = {key: getattr(body, key) for key in RequestSnapshot.model_fields}
            fields["input"] = normalise_input(body.input)
            if has_mcp(fields.get("tools")):  # the headers sent to MCP servers: never stored
                fields["tools"] = scrubbed(fields["tools"])
            snapshot = trusted(RequestSnapshot, fields)
            record = trusted(
                StoredResponse,
                {
                    "id": record_id,
                    "previous_response_id": body.previous_response_id,
                    "conversation_id": body.conversation_id,
                    "project": project,
                    "created_at": time.time(),
                    "completed_at": None,
                    "status": "in_progress",
                    "request": snapshot,
                    "response": trusted(
                        ResponseSnapshot,
                        {"output": [], "usage": None, "error": None, "incomplete_details": None},
                    ),
                    "metadata": request_metadata(body.user),
                    "instance_id": self.instance_id,
                    "timeline": None,
                },
            )
            record_started(span, record)
            items = model_context(self.sealer, project, history, snapshot.input, types)
            request = stateless_request(body, route, items)
            history_count, truncation = len(history), body.truncation == "auto"
            if truncation and route.context_window is not None:
                shorter = await truncated(
                    request, history_count, self.token_counter, route.context_window
                )
                request, history_count = shorter or (request, history_count)
            await self.upstreams.cooldowns.refresh()
            sticky = await self.upstreams.sticky(
                body.model,
                project,
                request["input"],
                parent_route,
                body.conversation_id,
                body.prompt_cache_key,
                continued,
            )
            upstream = await self._stack(
                body, project, route, request, len(snapshot.input), types, history_count, sticky
            )
            yield Turn(
                record,
                body.store,
                upstream,
                request,
                route.provider.max_stream_seconds,
                route.provider_name,
                history_count,
                truncation,
                self.spending,
                span=span,
                metrics=self.metrics,
                timeline=timeline,
            )

    async def _stack(
        self,
        body: CreateResponseBody,
        project: str,
        route: Route,
        request: Item,
        own_count: int,
        types: frozenset[str | None] | None,
        history_count: int,
        sticky: Sticky,
    ) -> Upstream:
        """The turn's upstream, in its layers from the inside out:

        1. each attempt: the wire's adapter for one deployment and key, metered
           (:meth:`Upstreams.upstream`);
        2. routed over the model's deployments, keys, retries and fallbacks, the place of its
           prompt cache first;
        3. the tools the gateway runs (MCP, web search, file search) looping over model calls,
           each through 2; their 400s raised here, before anything is sent;
        4. a compaction first, when the request asks for one and 3 cannot compact by itself.
        """
        upstream: Upstream = self.upstreams.routed(body.model, project, sticky)
        upstream = await with_hosted(
            upstream,
            self.config,
            route.provider,
            request,
            own_count,
            types,
            self.resolver,
            self.tracer,
            self.files,
            project,
        )
        if upstream.capabilities.compact is not None:
            return upstream  # it compacts by itself
        return await compacting(
            upstream,
            request,
            history_count,
            (body.model_extra or {}).get("context_management"),
            self.token_counter,
            self.sealer,
            project,
            functools.partial(self.record_usage, project, body.model),
            self.tracer,
        )

    @asynccontextmanager
    async def open_upstream(self, turn: Turn, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        """The turn's upstream call, observed for metrics and the access log.

        A request too long for the model's context is retried once without its oldest
        turns under ``truncation: "auto"``; otherwise (or if it is still too long) the
        turn fails with ``context_length_exceeded``.
        """
        async with AsyncExitStack() as stack:
            yield await self._open(stack, turn, stream)

    async def _open(self, stack: AsyncExitStack, turn: Turn, stream: bool) -> UpstreamStream:
        retried = False
        while True:
            try:
                return await stack.enter_async_context(
                    turn.upstream.open(turn.upstream_request, stream=stream)
                )
            except UpstreamError as error:
                if not is_context_overflow(error):
                    raise
                overflow = error
            if retried or not turn.truncation or not await self._shorten(turn, overflow):
                failure = {"code": CONTEXT_LENGTH_EXCEEDED, "message": overflow.message}
                return Replay([], TurnResult(status="failed", error=failure))
            retried = True

    async def _shorten(self, turn: Turn, overflow: UpstreamError) -> bool:
        """Drop the oldest turns of the request to fit the limit the refusal names (or half)."""
        request = turn.upstream_request
        window = stated_limit(overflow) or await self.token_counter.count(request) // 2
        shorter = await truncated(request, turn.history_count, self.token_counter, window)
        if shorter is None:
            return False
        turn.upstream_request, turn.history_count = shorter
        return True

    async def respond(
        self, body: CreateResponseBody, project: str, kept: list[Item] | None = None
    ) -> dict[str, Any]:
        """Run a non-streamed turn; return its response object once it is stored.

        ``kept`` receives the upstream's other events: an answer passed through as it
        came (see :mod:`gateway.upstream.wires.anthropic.passthrough`)."""
        result: TurnResult | None = None
        async with self.turn(body, project) as turn:
            async with self.open_upstream(turn, stream=False) as events:
                async for event in events:
                    if isinstance(event, TurnResult):
                        result = event
                    elif kept is not None:
                        kept.append(event)
            if result is None or result.status == "failed":
                error = (result.error if result else None) or {}
                message = error.get("message")
                if error.get("code") == CONTEXT_LENGTH_EXCEEDED:
                    raise APIError(400, str(message), param="input", code=CONTEXT_LENGTH_EXCEEDED)
                raise server_error(
                    502,
                    str(message or "The upstream provider returned no result."),
                    "upstream_error",
                )
            record = finished(turn.record, result)
            await save_finished(self.store, turn, record, started=False)
        return response_object(record, store=turn.store)

    async def start_background(self, body: CreateResponseBody, project: str) -> dict[str, Any]:
        """Store the turn ``queued`` and run it in a task; return it as stored."""
        record = await self.background.start(self, body, project)
        return response_object(record)

    async def cancel(self, project: str, response_id: str) -> dict[str, Any]:
        """Cancel a background response; a finished one is returned unchanged."""
        record = await self.store.get(project, response_id)
        if not record.request.background:
            raise invalid_request(
                "Only responses created with 'background': true can be cancelled.",
                code="invalid_request",
            )
        if record.status in UNFINISHED and not (
            await self.background.running.cancel(response_id)
            or await self.streams.running.cancel(response_id)
        ):
            # Run by another instance (or by one that died): the store decides. Its own
            # final save is then refused, as a finished turn is never overwritten.
            cancelled = with_status(record, "cancelled")
            with contextlib.suppress(SaveConflict):
                await self.store.save(cancelled, overwrite=True)
        return response_object(await self.store.get(project, response_id))

    async def stream(
        self, body: CreateResponseBody, project: str, history: list[Item] | None = None
    ) -> AsyncIterator[list[StreamEvent]]:
        """Start a streamed turn; return its events (see :mod:`gateway.turn.streaming`)."""
        return await self.streams.start(self, body, project, history)
