"""A minimal, fast Chat Completions, Responses and Messages server for benchmarks (fixed
reply, no recording): the same nine-word answer on each wire, streamed or not:
``/v1/chat/completions`` and ``/v1/responses`` as OpenAI answers, ``/v1/messages`` as Claude
does.

python -m uvicorn bench.fake_chat:app --port 9001
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WORDS = ["The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog."]
TEXT = "".join(WORDS)
USAGE = {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


async def _stream() -> AsyncIterator[bytes]:
    for word in WORDS:
        yield _chunk({"content": word})
    yield _chunk({}, "stop")
    yield f"data: {json.dumps({'choices': [], 'usage': USAGE})}\n\n".encode()
    yield b"data: [DONE]\n\n"


async def chat(request: Request) -> Response:
    body = await request.json()
    if body.get("stream"):
        return StreamingResponse(_stream(), media_type="text/event-stream")
    message = {"role": "assistant", "content": "".join(WORDS)}
    return JSONResponse(
        {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": USAGE,
        }
    )


MESSAGE_USAGE = {"input_tokens": 50, "output_tokens": 9}


def _event(kind: str, data: dict[str, object]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _message(content: list[dict[str, object]]) -> dict[str, object]:
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": MESSAGE_USAGE,
    }


async def _message_stream() -> AsyncIterator[bytes]:
    yield _event("message_start", {"message": _message([])})
    block = {"type": "text", "text": ""}
    yield _event("content_block_start", {"index": 0, "content_block": block})
    for word in WORDS:
        delta = {"type": "text_delta", "text": word}
        yield _event("content_block_delta", {"index": 0, "delta": delta})
    yield _event("content_block_stop", {"index": 0})
    stop = {"stop_reason": "end_turn", "stop_sequence": None}
    yield _event("message_delta", {"delta": stop, "usage": {"output_tokens": 9}})
    yield _event("message_stop", {})


async def messages(request: Request) -> Response:
    body = await request.json()
    if body.get("stream"):
        return StreamingResponse(_message_stream(), media_type="text/event-stream")
    return JSONResponse(_message([{"type": "text", "text": TEXT}]))


def _response(status: str, ids: str) -> dict[str, object]:
    done = status == "completed"
    part = {"type": "output_text", "text": TEXT, "annotations": []}
    item = {"id": f"msg_{ids}", "type": "message", "role": "assistant", "status": "completed"}
    return {
        "id": f"resp_{ids}",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "m",
        "status": status,
        "output": [{**item, "content": [part]}] if done else [],
        "usage": {"input_tokens": 50, "output_tokens": 9, "total_tokens": 59} if done else None,
    }


def _responses_events(ids: str) -> list[dict[str, object]]:
    item = {"id": f"msg_{ids}", "type": "message", "role": "assistant"}
    at = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    empty = {"type": "output_text", "text": "", "annotations": []}
    part = {**empty, "text": TEXT}
    return [
        {"type": "response.created", "response": _response("in_progress", ids)},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **at, "part": empty},
        *(
            {"type": "response.output_text.delta", **at, "delta": word, "logprobs": []}
            for word in WORDS
        ),
        {"type": "response.output_text.done", **at, "text": TEXT, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": part},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "status": "completed", "content": [part]},
        },
        {"type": "response.completed", "response": _response("completed", ids)},
    ]


def _responses_stream_body(ids: str) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
        for n, event in enumerate(_responses_events(ids))
    )


async def responses(request: Request) -> Response:
    """A Responses API upstream's answer: the whole stream in one piece, or the response.
    Its ids are new each time, as a store that keeps items by their id needs them."""
    body = await request.json()
    ids = uuid.uuid4().hex
    if body.get("stream"):
        return Response(_responses_stream_body(ids), media_type="text/event-stream")
    return JSONResponse(_response("completed", ids))


app = Starlette(
    routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1/messages", messages, methods=["POST"]),
    ]
)


def serve_command(python: str, port: int) -> list[str]:
    """The command that serves :data:`app` on ``port`` as fast as uvicorn can."""
    return [
        python,
        "-m",
        "uvicorn",
        "bench.fake_chat:app",
        "--port",
        str(port),
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--log-level",
        "warning",
        "--no-access-log",
    ]
