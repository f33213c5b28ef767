"""An upstream that misbehaves on request: the request's ``model`` names the fault.

It speaks just enough Chat Completions, Responses and Messages to start an answer, then
breaks it the way real providers and proxies do: cut connections, clean closes before the
end, empty or malformed bodies, HTML error pages, dripping or endless bodies, huge bodies.
One fault is only slow: ``slow_head`` holds its response head for
:data:`SLOW_HEAD_SECONDS`, then answers in full.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

HUGE_BYTES = 200_000
SLOW_HEAD_SECONDS = 0.5
DRIP = [b"{", b'"a"', b":", b"1", b"}"]
DRIP_SECONDS = 0.1


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return (
        f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [choice]})}\n\n".encode()
    )


def _event(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


_MESSAGE = {"id": "m1", "type": "message", "role": "assistant", "status": "completed"}


def _text_events(text: str) -> list[bytes]:
    added = {**_MESSAGE, "status": "in_progress", "content": []}
    return [
        _event({"type": "response.output_item.added", "output_index": 0, "item": added}),
        _event(
            {
                "type": "response.output_text.delta",
                "item_id": "m1",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
        ),
    ]


async def _cut(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
    raise ConnectionResetError("the misbehaving upstream cuts the connection")


async def _slowly(chunks: list[bytes], delay: float, repeat: bool = False) -> AsyncIterator[bytes]:
    while True:
        for chunk in chunks:
            await asyncio.sleep(delay)
            yield chunk
        if not repeat:
            return


def _stream(body: AsyncIterator[bytes] | list[bytes], status: int = 200) -> Response:
    if isinstance(body, list):
        body = _slowly(body, 0)
    return StreamingResponse(body, status_code=status, media_type="text/event-stream")


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status, headers, media_type="application/json")


def _common(fault: str) -> Response | None:
    """Faults that look the same on both wires and either mode."""
    if fault == "html_502":
        page = "<html><body>" + "Bad Gateway " * 500 + "</body></html>"
        return Response(page, 502, media_type="text/html")
    if fault == "html_200":
        return Response("<html>maintenance</html>", 200, media_type="text/html")
    if fault == "empty":
        return Response(b"", 200, media_type="application/json")
    if fault == "rate_limited":
        return _json({"error": {"message": "slow down"}}, 429, {"Retry-After": "7"})
    if fault == "unavailable":
        return _json({"error": {"message": "overloaded"}}, 503, {"Retry-After": "11"})
    if fault == "long_error":
        return _json({"error": {"message": "x" * 20_000}}, 400)
    if fault == "huge":
        return _json({"padding": "x" * HUGE_BYTES})
    if fault == "drip":  # a body that never ends, and never makes a stream event
        return StreamingResponse(
            _slowly(DRIP, DRIP_SECONDS, repeat=True), media_type="application/json"
        )
    return None


async def _then_drip(first: bytes) -> AsyncIterator[bytes]:
    """One stream event, then bytes that never make another."""
    yield first
    async for piece in _slowly(DRIP, DRIP_SECONDS, repeat=True):
        yield piece


async def _then_silent(first: bytes, seconds: float) -> AsyncIterator[bytes]:
    yield first
    await asyncio.sleep(seconds)


async def chat(request: Request) -> Response:
    body = await request.json()
    fault, stream = body["model"], bool(body.get("stream"))
    common = _common(fault)
    if common is not None:
        return common
    hello = [_chat_chunk({"role": "assistant", "content": "Hel"}), _chat_chunk({"content": "lo"})]
    if fault == "slow_head":
        await asyncio.sleep(SLOW_HEAD_SECONDS)
        if stream:
            return _stream([*hello, _chat_chunk({}, "stop"), b"data: [DONE]\n\n"])
        message = {"role": "assistant", "content": "Hello"}
        return _json({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    if stream:
        streams: dict[str, Any] = {
            "cut": lambda: _cut(hello),
            "no_done": lambda: hello,
            "finish_no_done": lambda: [*hello, _chat_chunk({}, "stop")],
            "empty_stream": lambda: [],
            "malformed": lambda: [*hello, b'data: {"choices": 5}\n\n'],
            "bad_tool_calls": lambda: [*hello, _chat_chunk({"tool_calls": 5})],
            "not_json": lambda: [*hello, b"data: {nope\n\n"],
            "error_event": lambda: [*hello, b'data: {"error": {"message": "boom"}}\n\n'],
            "idle": lambda: _then_silent(hello[0], 2.0),
            "endless": lambda: _slowly(hello, 0.05, repeat=True),
            "huge_stream": lambda: [_chat_chunk({"content": "x" * HUGE_BYTES})],
            "drip_after_start": lambda: _then_drip(hello[0]),
        }
        return _stream(streams[fault]())
    whole: dict[str, Any] = {
        "malformed": {"choices": 5},
        "no_choices": {"choices": []},
        "bad_tool_calls": {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "tool_calls": 5},
                }
            ]
        },
        "content_object": {
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"content": {"text": "hi"}}}
            ]
        },
        "error_text": {"error": "text"},
        "list_body": [1, 2, 3],
    }
    return _json(whole[fault])


async def responses(request: Request) -> Response:
    body = await request.json()
    fault, stream = body["model"], bool(body.get("stream"))
    common = _common(fault)
    if common is not None:
        return common
    hello = _text_events("Hello")
    if stream:
        streams: dict[str, Any] = {
            "cut": lambda: _cut(hello),
            "no_done": lambda: hello,
            "empty_stream": lambda: [],
            "malformed": lambda: [
                *hello,
                _event({"type": "response.completed", "response": {"output": 5}}),
            ],
            "not_json": lambda: [*hello, b"data: {nope\n\n"],
            "error_event": lambda: [
                *hello,
                _event({"type": "error", "code": "x", "message": "boom"}),
            ],
            "idle": lambda: _then_silent(hello[0], 2.0),
            "endless": lambda: _slowly(hello, 0.05, repeat=True),
            # The first event itself over the size limit, however its bytes arrive.
            "huge_stream": lambda: [
                _event(
                    {
                        "type": "response.output_item.added",
                        "output_index": 0,
                        "item": {**_MESSAGE, "status": "in_progress", "padding": "x" * HUGE_BYTES},
                    }
                )
            ],
            "drip_after_start": lambda: _then_drip(hello[0]),
        }
        return _stream(streams[fault]())
    whole: dict[str, Any] = {
        "malformed": {"status": "completed", "output": 5},
        "content_string": {
            "status": "completed",
            "output": [{**_MESSAGE, "content": "just a string"}],
        },
        "error_text": {"error": "text", "output": "none"},
        "no_output": {"status": "completed", "padding": "an object, but not a response"},
        "list_body": [1, 2, 3],
    }
    return _json(whole[fault])


_MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


async def messages(request: Request) -> Response:
    """The Messages API's faults: those common to every wire, and a stream that starts
    with ``message_start`` and then only drips."""
    body = await request.json()
    common = _common(body["model"])
    if common is not None:
        return common
    return _stream(_then_drip(_event(_MESSAGE_START)))


def misbehaving_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/messages", messages, methods=["POST"]),
        ]
    )
