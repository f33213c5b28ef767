"""A minimal, fast Chat Completions server for benchmarks (fixed reply, no recording).

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


app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


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
