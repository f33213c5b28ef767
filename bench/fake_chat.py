"""A minimal, fast Chat Completions and Messages server for benchmarks (fixed reply, no
recording): ``/v1/chat/completions`` as OpenAI answers, ``/v1/messages`` as Claude does.

python -m uvicorn bench.fake_chat:app --port 9001
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WORDS = ["The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog."]
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
    return JSONResponse(_message([{"type": "text", "text": "".join(WORDS)}]))


app = Starlette(
    routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
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
