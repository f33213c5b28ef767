"""``POST /v1/chat/completions``: Chat Completions clients reach every configured model.

The request becomes one turn without history of the turn service, which routes, retries,
limits, meters and counts it like any other, and stores it for the console (unless the
client says ``store: false`` or its project is one of ``auth.unstored_projects``); its
answer (or its stream of events) goes back as a ``chat.completion`` (or
``chat.completion.chunk`` server-sent events ending in ``data: [DONE]``). With ``n`` above
one, ``n`` such turns run at once and their answers are the choices (see
:mod:`gateway.api.chat.choices`). Errors name the Chat request's own params.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ...api.chat import (
    ChatTurn,
    ChoiceChunks,
    ChunkTranslator,
    chat_completion,
    merged_completion,
    parse_chat_body,
    to_turn,
)
from ...api.request_body import CreateResponseBody
from ...errors import APIError
from ...observability.request_log import note_failed_request
from ...turn.events import StreamEvent
from ...upstream import UnsupportedInput
from ..errors import from_upstream_error
from ..json_response import SSE_HEADERS, JSONResponse
from .common import exchange_stored, project, read_body, service

DONE = b"data: [DONE]\n\n"


class ChunkStream(Response):
    """Chat chunks as server-sent events (``data:`` lines alone), as they come."""

    media_type = "text/event-stream"

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self.status_code = 200
        self.background = None
        self._chunks = chunks
        self.init_headers(SSE_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(start)
        async for chunk in self._chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _chunks(events: AsyncIterator[list[StreamEvent]], turn: ChatTurn) -> AsyncIterator[bytes]:
    translator = ChunkTranslator(
        turn.model, include_usage=turn.include_usage, logprobs=turn.logprobs
    )
    async for batch in events:
        framed = [
            b"data: %s\n\n" % orjson.dumps(chunk)
            for event in batch
            for chunk in translator.event(orjson.loads(event.data))
        ]
        if framed:
            yield b"".join(framed)
    if not translator.ended:  # a stream cut short says so before it ends
        cut = {"type": "error", "message": "The answer ended before it was complete."}
        yield b"data: %s\n\n" % orjson.dumps(translator.event(cut)[0])
    yield DONE


async def _choice_chunks(
    streams: list[AsyncIterator[list[StreamEvent]]], turn: ChatTurn
) -> AsyncIterator[bytes]:
    """``n`` streamed turns' events, as they come, as the chunks of one stream's choices."""
    merged = ChoiceChunks(
        len(streams), turn.model, include_usage=turn.include_usage, logprobs=turn.logprobs
    )
    arrived: asyncio.Queue[tuple[int, list[StreamEvent] | None]] = asyncio.Queue()

    async def pump(index: int, events: AsyncIterator[list[StreamEvent]]) -> None:
        try:
            async for batch in events:
                arrived.put_nowait((index, batch))
        except Exception:  # a choice's stream cut short: its missing end says so below
            pass
        finally:
            arrived.put_nowait((index, None))

    pumps = [asyncio.create_task(pump(n, events)) for n, events in enumerate(streams)]
    index = 0
    try:
        running = len(pumps)
        while running and not merged.ended:
            index, batch = await arrived.get()
            if batch is None:
                running -= 1
                if not merged.ended_choice(index):
                    break  # a choice cut short ends the stream with an error
                continue
            framed = [
                b"data: %s\n\n" % orjson.dumps(chunk)
                for event in batch
                for chunk in merged.event(index, orjson.loads(event.data))
            ]
            if framed:
                yield b"".join(framed)
    finally:
        for task in pumps:
            task.cancel()
    if not merged.ended:
        cut = {"type": "error", "message": "The answer ended before it was complete."}
        yield b"data: %s\n\n" % orjson.dumps(merged.event(index, cut)[0])
    yield DONE


async def _started(
    request: Request, body: CreateResponseBody, count: int
) -> list[AsyncIterator[list[StreamEvent]]]:
    """``count`` streamed turns of ``body`` started; if one cannot start, none runs on."""
    svc, caller = service(request), project(request)
    started: list[AsyncIterator[list[StreamEvent]]] = []
    try:
        for _ in range(count):
            started.append(await svc.stream(body.model_copy(deep=True), caller))
    except BaseException:
        for events in started:
            closing = getattr(events, "aclose", None)
            if closing is not None:
                await closing()
        raise
    return started


async def _answers(request: Request, body: CreateResponseBody, count: int) -> list[dict[str, Any]]:
    """``count`` non-streamed turns of ``body`` run at once; the first failure raised."""
    svc, caller = service(request), project(request)
    answers = await asyncio.gather(
        *(svc.respond(body.model_copy(deep=True), caller) for _ in range(count)),
        return_exceptions=True,
    )
    made: list[dict[str, Any]] = []
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
        made.append(answer)
    return made


async def create_chat_completion(request: Request) -> Response:
    chat = parse_chat_body(await read_body(request))
    turn = to_turn(chat)
    turn.body.store = exchange_stored(request, "chat_completions", chat.store)
    svc, caller = service(request), project(request)
    count = chat.n or 1
    try:
        if turn.body.stream:
            if count > 1:
                return ChunkStream(_choice_chunks(await _started(request, turn.body, count), turn))
            return ChunkStream(_chunks(await svc.stream(turn.body, caller), turn))
        if count > 1:
            completions = [
                chat_completion(answer, turn.model, logprobs=turn.logprobs)
                for answer in await _answers(request, turn.body, count)
            ]
            return JSONResponse(merged_completion(completions))
        answer = await svc.respond(turn.body, caller)
        return JSONResponse(chat_completion(answer, turn.model, logprobs=turn.logprobs))
    except UnsupportedInput as error:
        note_failed_request(caller, chat.model)
        refused = from_upstream_error(error)
        refused.param = turn.chat_param(refused.param)
        raise refused from None
    except APIError as error:
        note_failed_request(caller, chat.model)
        error.param = turn.chat_param(error.param)
        raise
    except Exception:
        note_failed_request(caller, chat.model)
        raise


routes = [Route("/v1/chat/completions", create_chat_completion, methods=["POST"])]
