"""A deterministic fake provider speaking Chat Completions and Responses over real HTTP.

It records every request it receives, so tests assert exactly what went upstream, and
answers from a queue of scripted replies (or a default reply naming the last user text).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

UPSTREAM_KEY = "sk-upstream-secret-0123456789"


@dataclass
class Reply:
    """One scripted answer."""

    text: str | None = None
    reasoning: str | None = None
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, args)
    finish_reason: str = "stop"
    status: int = 200
    error_body: Any = None
    break_after: int | None = None  # streamed chunks sent before the connection drops
    delay: float = 0.0  # seconds before each streamed chunk
    gate: threading.Event | None = None  # an unstreamed answer waits until it is set
    hold_after: int | None = None  # streamed chunks sent before a stream waits for ``gate``
    piece_chars: int | None = None  # streamed text, reasoning and arguments in pieces this long
    # Gemini's OpenAI-compatible endpoint: a signature on the first tool call, which every
    # later request must send back on that call (``extra_content.google.thought_signature``)
    thought_signature: str | None = None
    phase: str | None = None  # a Responses upstream's assistant message's ``phase``
    service_tier: str | None = None  # the tier the answer says served it
    # A Responses stream's own events, sent after its items' events, before its end
    extra_events: list[dict[str, Any]] = field(default_factory=list)
    # A Responses upstream's output items given whole (a hosted tool's, phased messages),
    # before the text's message; streamed as added then done
    items: list[dict[str, Any]] = field(default_factory=list)

    def pieces(self, text: str, count: int = 3) -> list[str]:
        """``text`` as streamed: in ``count`` pieces, or in pieces of ``piece_chars``."""
        if self.piece_chars is None:
            return _pieces(text, count)
        size = self.piece_chars
        return [text[i : i + size] for i in range(0, len(text), size)]


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


def _pieces(text: str, count: int = 3) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sent_messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The role and text of each message a request sent upstream, on either wire."""
    items = body["messages"] if "messages" in body else body["input"]
    return [(item["role"], _text_of(item["content"])) for item in items if "role" in item]


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def words(text: str) -> list[str]:
    """``text`` cut before each space: the made-up tokens of the fake."""
    return re.findall(r"\s*\S+", text)


def token_logprobs(text: str, top: int) -> list[dict[str, Any]]:
    """Made-up log probabilities for ``text``, one entry per word, ``top`` alternatives each."""
    entries = []
    for token in words(text):
        alternatives = [
            {"token": f"alt{m}", "logprob": -1.0 - m, "bytes": list(f"alt{m}".encode())}
            for m in range(top)
        ]
        entries.append(
            {
                "token": token,
                "logprob": -0.25,
                "bytes": list(token.encode()),
                "top_logprobs": alternatives,
            }
        )
    return entries


USAGE = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 3},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


class FakeUpstream:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        # A context window in tokens (a token counted as four characters of the
        # messages), and whether its error says ``context_length_exceeded`` (OpenAI)
        # or only explains itself in words (vLLM).
        self.context_window: int | None = None
        self.context_error_code = True
        self.thought_signatures: dict[str, str] = {}  # by the tool call id they came with

    def reset(self) -> None:
        """Forget what was received, scripted and signed; no context window."""
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self.replies.clear()
            self.thought_signatures.clear()
        self.context_window = None
        self.context_error_code = True

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    def _next(self, body: dict[str, Any], default_text: str) -> Reply:
        with self._lock:
            self.requests.append(body)
            return self.replies.popleft() if self.replies else Reply(text=default_text)

    # -- chat completions --------------------------------------------------------------

    def _too_long(self, messages: list[dict[str, Any]]) -> Response | None:
        tokens = len(json.dumps([m.get("content") for m in messages])) // 4
        if self.context_window is None or tokens <= self.context_window:
            return None
        error = {
            "message": f"This model's maximum context length is {self.context_window} tokens. "
            f"However, your messages resulted in {tokens} tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded" if self.context_error_code else None,
        }
        return JSONResponse({"error": error}, 400)

    def _unsigned(self, messages: list[dict[str, Any]]) -> Response | None:
        """Gemini's refusal of a tool call sent back without the signature it came with."""
        for message in messages:
            for call in message.get("tool_calls") or []:
                issued = self.thought_signatures.get(call.get("id"))
                sent = ((call.get("extra_content") or {}).get("google") or {}).get(
                    "thought_signature"
                )
                if issued is not None and sent != issued:
                    error = {
                        "code": 400,
                        "message": "Function call is missing a thought_signature in "
                        "functionCall parts. This is required for tools to work correctly.",
                        "status": "INVALID_ARGUMENT",
                    }
                    return JSONResponse([{"error": error}], 400)
        return None

    def _signed(self, reply: Reply, call: dict[str, Any]) -> dict[str, Any]:
        """``call`` (the first of a reply) with the reply's thought signature, remembered."""
        if reply.thought_signature is None:
            return call
        self.thought_signatures[call["id"]] = reply.thought_signature
        return {**call, "extra_content": {"google": {"thought_signature": reply.thought_signature}}}

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.headers.append(dict(request.headers))
        reply = self._next(body, f"reply to: {_last_user_text(body['messages'])}")
        if (too_long := self._too_long(body["messages"])) is not None:
            return too_long
        if (unsigned := self._unsigned(body["messages"])) is not None:
            return unsigned
        if reply.status != 200:
            return JSONResponse(reply.error_body or {"error": {"message": "nope"}}, reply.status)
        top = body.get("top_logprobs", 0) if body.get("logprobs") else None
        if body.get("stream"):
            chunks = self.chat_chunks(reply, top, self._signed)
            return StreamingResponse(
                self._chat_stream(reply, chunks), media_type="text/event-stream"
            )
        if reply.gate is not None:
            await asyncio.to_thread(reply.gate.wait, 60)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in reply.tool_calls
            ]
            message["tool_calls"][0] = self._signed(reply, message["tool_calls"][0])
        return JSONResponse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": reply.finish_reason,
                        "logprobs": None
                        if top is None
                        else {"content": token_logprobs(reply.text or "", top)},
                    }
                ],
                "usage": USAGE,
                **({} if reply.service_tier is None else {"service_tier": reply.service_tier}),
            }
        )

    @staticmethod
    def chat_chunks(
        reply: Reply,
        top_logprobs: int | None = None,
        signed: Callable[[Reply, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The chunks of a streamed answer; with ``top_logprobs``, content carries logprobs;
        ``signed`` adds a thought signature to the first tool call's first chunk."""

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
            if top_logprobs is not None and delta.get("content"):
                choice["logprobs"] = {"content": token_logprobs(delta["content"], top_logprobs)}
            return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"reasoning_content": p}) for p in reply.pieces(reply.reasoning or "")]
        text = reply.text or ""
        pieces = words(text) if top_logprobs is not None else reply.pieces(text)
        chunks += [chunk({"content": p}) for p in pieces]
        for index, (cid, name, args) in enumerate(reply.tool_calls):
            first = {"index": index, "id": cid, "type": "function"}
            opening = {**first, "function": {"name": name, "arguments": ""}}
            if index == 0 and signed is not None:
                opening = signed(reply, opening)
            chunks.append(chunk({"tool_calls": [opening]}))
            for piece in reply.pieces(args, 2):
                chunks.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        chunks.append(chunk({}, reply.finish_reason))
        last = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": USAGE,
        }
        if reply.service_tier is not None:
            last["service_tier"] = reply.service_tier
        chunks.append(last)
        return chunks

    @staticmethod
    async def _pace(reply: Reply, number: int) -> None:
        """Wait before streamed chunk ``number``: ``delay``, and at ``hold_after`` the gate."""
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if number == reply.hold_after and reply.gate is not None:
            await asyncio.to_thread(reply.gate.wait, 60)

    async def _chat_stream(
        self, reply: Reply, chunks: list[dict[str, Any]]
    ) -> AsyncIterator[bytes]:
        for number, chunk in enumerate(chunks):
            if reply.break_after is not None and number >= reply.break_after:
                raise ConnectionResetError("the fake upstream drops the stream")
            await self._pace(reply, number)
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    # -- responses ---------------------------------------------------------------------

    async def compact(self, request: Request) -> Response:
        """Compacts as OpenAI does, into an item only it can read."""
        body = await request.json()
        self._next(body, "")
        item = {"id": "cmp_up", "type": "compaction", "encrypted_content": "opaque-upstream"}
        usage = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
        return JSONResponse(
            {
                "id": "resp_compacted",
                "object": "response.compaction",
                "created_at": 1,
                "output": [item],
                "usage": usage,
            }
        )

    async def input_tokens(self, request: Request) -> Response:
        """Counts ten tokens per input item, so a test knows what to expect."""
        body = await request.json()
        self._next(body, "")
        return JSONResponse(
            {"object": "response.input_tokens", "input_tokens": 10 * len(body["input"])}
        )

    async def responses(self, request: Request) -> Response:
        body = await request.json()
        self.headers.append(dict(request.headers))
        texts = [
            p.get("text", "")
            for item in body.get("input", [])
            if item.get("role") == "user"
            for p in (
                item["content"]
                if isinstance(item["content"], list)
                else [{"text": item["content"]}]
            )
        ]
        reply = self._next(body, f"reply to: {texts[-1] if texts else ''}")
        if reply.status != 200:
            return JSONResponse(reply.error_body or {"error": {"message": "nope"}}, reply.status)
        item = {
            "id": "msg_upstream_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
        if reply.phase is not None:
            item["phase"] = reply.phase
        said = reply.text is not None or not (reply.tool_calls or reply.reasoning or reply.items)
        output = [*self._reasoning_items(reply), *reply.items, *([item] if said else [])]
        output += [
            {
                "id": f"fc_upstream_{n}",
                "type": "function_call",
                "status": "completed",
                "call_id": cid,
                "name": name,
                "arguments": args,
            }
            for n, (cid, name, args) in enumerate(reply.tool_calls)
        ]
        incomplete = reply.finish_reason == "length"
        usage: dict[str, Any] = {"input_tokens": 5, "output_tokens": 4, "total_tokens": 9}
        if reply.reasoning:  # a reasoning model counts its thinking
            usage["input_tokens_details"] = {"cached_tokens": 2}
            usage["output_tokens_details"] = {"reasoning_tokens": 3}
        response: dict[str, Any] = {
            "id": "resp_upstream_1",
            "object": "response",
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "output": output,
            "usage": usage,
        }
        if reply.service_tier is not None:
            response["service_tier"] = reply.service_tier
        if not body.get("stream"):
            if reply.gate is not None:
                await asyncio.to_thread(reply.gate.wait, 60)
            return JSONResponse(response)
        events: list[dict[str, Any]] = [
            {
                "type": "response.created",
                "response": {**response, "status": "in_progress", "output": []},
            },
        ]
        for index, done in enumerate(output):
            events += self._item_events(reply, index, done)
        events += reply.extra_events
        events.append({"type": f"response.{response['status']}", "response": response})

        async def stream() -> AsyncIterator[bytes]:
            for number, event in enumerate(events):
                if reply.break_after is not None and number >= reply.break_after:
                    raise ConnectionResetError("the fake upstream drops the stream")
                await self._pace(reply, number)
                data = json.dumps({**event, "sequence_number": number})
                yield f"event: {event['type']}\ndata: {data}\n\n".encode()

        return StreamingResponse(stream(), media_type="text/event-stream")

    @staticmethod
    def _reasoning_items(reply: Reply) -> list[dict[str, Any]]:
        """A reasoning model's summary of its thinking, as OpenAI's Responses API gives it."""
        if not reply.reasoning:
            return []
        summary = [{"type": "summary_text", "text": reply.reasoning}]
        return [{"id": "rs_upstream_1", "type": "reasoning", "summary": summary}]

    @staticmethod
    def _item_events(reply: Reply, index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        """The stream events of one output item: added, its deltas, done."""
        at = {"item_id": item["id"], "output_index": index}
        kind = item["type"]
        if item in reply.items:
            added = {"type": "response.output_item.added", "output_index": index, "item": item}
            return [added, {**added, "type": "response.output_item.done"}]
        opened = {**item, "status": "in_progress"}
        if kind == "message":
            opened["content"] = []
        elif kind == "function_call":
            opened["arguments"] = ""
        else:
            opened["summary"] = []
        events = [{"type": "response.output_item.added", "output_index": index, "item": opened}]
        if kind == "message":
            part = item["content"][0]
            text = part["text"] or ""
            events.append(
                {
                    "type": "response.content_part.added",
                    **at,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            for piece in reply.pieces(text):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        **at,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            events += [
                {
                    "type": "response.output_text.done",
                    **at,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                },
                {"type": "response.content_part.done", **at, "content_index": 0, "part": part},
            ]
        elif kind == "function_call":
            for piece in reply.pieces(item["arguments"], 2):
                events.append(
                    {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **at,
                    "arguments": item["arguments"],
                }
            )
        else:
            text = item["summary"][0]["text"]
            for piece in reply.pieces(text):
                events.append(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": 0,
                        "delta": piece,
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/responses/input_tokens", self.input_tokens, methods=["POST"]),
                Route("/v1/responses/compact", self.compact, methods=["POST"]),
            ]
        )
