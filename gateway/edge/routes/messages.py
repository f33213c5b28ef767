"""``/v1/messages`` and ``/v1/messages/count_tokens``: Anthropic's Messages API in front of
every configured model, each request run as one turn without history (see
:mod:`gateway.api.messages`) and stored, for the console, unless its project is unstored;
its errors in Anthropic's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.messages import (
    MessagesBody,
    MessagesStream,
    RelayedStream,
    ThinkingSeals,
    parse_messages_body,
    passed_answer,
    to_count_body,
    to_message,
    to_responses_body,
)
from ...api.messages.claude_only import check_translatable
from ...api.request_body import CreateResponseBody
from ...observability.request_log import note_failed_request
from ...turn.events import StreamEvent
from ...upstream.wires.anthropic.passthrough import passthrough
from ..json_response import EventStream, JSONResponse
from ..messages_errors import anthropic_error_response, as_api_error
from .common import exchange_stored, project, read_body, service


def _seals(request: Request, body: MessagesBody) -> ThinkingSeals:
    svc = service(request)
    claude = [
        route.deployment
        for route in svc.config.routes(body.model)
        if route.provider.wire.takes_messages
    ]
    return ThinkingSeals(svc.sealer, project(request), body.model, claude)


def _pass_through(request: Request, body: MessagesBody, turn: CreateResponseBody) -> bool:
    """Hand the client's body along for a Claude deployment (the model's or a fallback's),
    which gets it as it came; the other wires get its translation, and a model none of whose
    deployments is Claude is refused what only Claude does (``top_k``, context edits)."""
    providers = service(request).upstreams.providers(body.model)
    if not any(p.wire.takes_messages for p in providers):
        if providers:  # else the model is not found, told by the turn
            check_translatable(body, providers[0].wire_api)
        return False
    beta = request.headers.get("anthropic-beta")
    turn.pass_through(passthrough(body.model_dump(exclude_unset=True), beta))
    return True


def _anthropic_errors(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except Exception as error:
            return anthropic_error_response(as_api_error(error))

    return answer


async def _translated(
    events: AsyncIterator[list[StreamEvent]], stream: MessagesStream | RelayedStream
) -> AsyncIterator[list[StreamEvent]]:
    async for batch in events:
        made = [
            StreamEvent(kind, orjson.dumps(data))
            for event in batch
            for kind, data in stream.event(orjson.loads(event.data))
        ]
        if made:
            yield made


@_anthropic_errors
async def create_message(request: Request) -> Response:
    svc = service(request)
    body = parse_messages_body(await read_body(request))
    seals = _seals(request, body)
    turn = to_responses_body(body, seals)
    turn.store = exchange_stored(request, "messages")
    relayed = _pass_through(request, body, turn)
    kept: list[dict[str, Any]] = []
    try:
        if body.stream:
            events = await svc.stream(turn, project(request))
            translated = MessagesStream(body.model, seals, body.stop_sequences)
            stream = RelayedStream(body.model, translated) if relayed else translated
            return EventStream(_translated(events, stream))
        answer = await svc.respond(turn, project(request), kept)
    except Exception:
        note_failed_request(project(request), body.model)
        raise
    passed = passed_answer(kept, body.model)
    if passed is not None:
        return JSONResponse(passed)
    return JSONResponse(to_message(answer, body.model, seals, body.stop_sequences))


@_anthropic_errors
async def count_tokens(request: Request) -> Response:
    svc = service(request)
    body = parse_messages_body(await read_body(request), count=True)
    counted = to_count_body(body, _seals(request, body))
    _pass_through(request, body, counted)
    tokens = await svc.count_input_tokens(counted, project(request))
    return JSONResponse({"input_tokens": tokens})


routes = [
    Route("/v1/messages", create_message, methods=["POST"]),
    Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
]
