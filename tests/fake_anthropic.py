"""A strict fake of Anthropic's Messages API (``/v1/messages`` and its ``count_tokens``).

Every request body is validated against the ``anthropic`` SDK's own request types (made
strict: unknown keys refused, nested lists validated) and against the API's documented
rules: a first user message and alternating roles, tool_use answered by tool_result,
tools of unique names whose input_schema is an object schema, images and documents in user
content only, signed thinking blocks, at most four cache breakpoints, real images. Every
answer is validated against the SDK's response types before it is sent, so the fake cannot
drift from the wire.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import itertools
import json
import re
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pydantic
from anthropic.types import Message, MessageTokensCount
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .anthropic_types import (
    CONTEXT_MANAGEMENT,
    COUNT,
    CREATE,
    CREATE_STREAMING,
    ERROR_EVENT,
    EVENT,
)

ANTHROPIC_KEY = "sk-ant-fake-0123456789"
# The SDK (2.10) sends ``anthropic-version: 2026-10-21`` and its key as a bearer token.
VERSIONS = {"2023-01-01", "2023-06-01", "2026-10-21"}

_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_MAGIC = {  # what the decoded data of each media type starts with
    "image/png": (b"\x89PNG",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
    "application/pdf": (b"%PDF",),
}
_ERRORS = {  # status -> the error type and message Anthropic answers with it
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the resource"),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes"),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
_THINKING_TYPES = ("thinking", "redacted_thinking")
_SAMPLING = ("temperature", "top_p", "top_k")
CONTEXT_BETA = "context-management-2025-06-27"  # the beta that takes context_management
_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
_THINKING_FIRST = (
    "Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is "
    "enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking "
    "blocks from previous turns. To avoid this requirement, disable `thinking`."
)


class RequestError(Exception):
    def __init__(self, message: str | None, status: int = 400, kind: str | None = None) -> None:
        kind_, default = _ERRORS.get(status, _ERRORS[500])
        super().__init__(message or default)
        self.status, self.kind = status, kind or kind_


def _validation_message(error: pydantic.ValidationError) -> str:
    """The deepest error, its location without pydantic's union-branch labels."""
    worst = max(error.errors(), key=lambda e: len(e["loc"]))
    loc = [str(p) for p in worst["loc"] if not re.fullmatch(r"\S+\[.*\]|str|int", str(p))]
    return f"{'.'.join(loc)}: {worst['msg']}"


@dataclass
class AnthropicReply:
    """One scripted answer. ``stop_reason`` None means "tool_use" if there are tool uses,
    else "end_turn". A ``status`` other than 200 answers Anthropic's error body instead."""

    text: str | None = None
    thinking: str | None = None
    redacted_thinking: str | None = None  # the ``data`` of a redacted_thinking block
    tool_uses: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, int] | None = None  # overrides the computed counts
    status: int = 200
    error_type: str | None = None  # default: the status's usual type (529 overloaded_error)
    error_message: str | None = None
    retry_after: int | None = None  # a retry-after header; a 429 sends 0 when unset
    stream_error_after: int | None = None  # SSE events before an overloaded ``error`` event
    break_after: int | None = None  # SSE events (ping included) before the connection drops
    interleave_tools: bool = False  # stream tool_use blocks open at once, deltas alternating
    no_stop_reason: bool = False  # answer ``stop_reason: null`` (the SDK's types allow it)


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _pieces(text: str, count: int = 3) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _cached(block: dict[str, Any]) -> bool:
    nested = block.get("content") if block.get("type") == "tool_result" else None
    return block.get("cache_control") is not None or any(map(_cached, _blocks(nested or [])))


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            return " ".join(b["text"] for b in _blocks(message["content"]) if b["type"] == "text")
    return ""


class FakeAnthropic:
    def __init__(self, *api_keys: str, signing_key: bytes = b"fake") -> None:
        self.api_keys = set(api_keys or [ANTHROPIC_KEY])  # each with its own prompt cache
        self.signing_key = signing_key
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.replies: deque[AnthropicReply] = deque()
        self.context_window: int | None = None  # tokens, as counted by ``input_tokens``
        self.issued_redacted: set[str] = set()
        self._cache: dict[str, set[str]] = {}  # api key -> hashes of cached prefixes
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget what was received, scripted, cached and issued; no context window."""
        with self._lock:
            for each in (self.requests, self.headers, self.paths, self.replies):
                each.clear()
            self.issued_redacted.clear()
            self._cache.clear()
        self.context_window = None

    def script(self, *replies: AnthropicReply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    def sign(self, thinking: str) -> str:
        """The signature this fake gives a thinking block with this text."""
        digest = hmac.new(self.signing_key, thinking.encode(), hashlib.sha256).digest()
        return base64.b64encode(digest).decode()

    def replayed_thinking(self, body: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The thinking and redacted_thinking blocks of a request's assistant messages."""
        said = [
            _blocks(m["content"])
            for m in (body or self.last)["messages"]
            if m["role"] == "assistant"
        ]
        return [b for blocks in said for b in blocks if b["type"] in _THINKING_TYPES]

    # -- checks ------------------------------------------------------------------------

    def _receive(self, request: Request, body: Any) -> dict[str, Any]:
        with self._lock:
            self.headers.append(dict(request.headers))
            self.paths.append(request.url.path)
            if isinstance(body, dict):
                self.requests.append(body)
        if _api_key(request) not in self.api_keys:
            raise RequestError("invalid x-api-key", 401)
        if (version := request.headers.get("anthropic-version")) is None:
            raise RequestError("anthropic-version: header is required")
        if version not in VERSIONS:
            raise RequestError(f"anthropic-version: unknown version {version}")
        if not isinstance(body, dict):
            raise RequestError("There was an error parsing the body as JSON")
        return body

    def check(
        self, body: dict[str, Any], path: str = "/v1/messages", betas: frozenset[str] = frozenset()
    ) -> None:
        """``check_request``, and every replayed thinking block one this fake issued."""
        check_request(body, path, betas)
        for i, message in enumerate(body["messages"]):
            for j, block in enumerate(_blocks(message["content"])):
                where = f"messages.{i}.content.{j}"
                if block["type"] == "thinking" and not hmac.compare_digest(
                    block["signature"], self.sign(block["thinking"])
                ):
                    raise RequestError(f"{where}: Invalid `signature` in `thinking` block")
                if (
                    block["type"] == "redacted_thinking"
                    and block["data"] not in self.issued_redacted
                ):
                    raise RequestError(f"{where}: Invalid `data` in `redacted_thinking` block")

    # -- usage -------------------------------------------------------------------------

    @staticmethod
    def _units(body: dict[str, Any]) -> list[tuple[str, bool]]:
        """The request in cache order (tools, system, messages), one unit per block: its
        text as counted (without cache_control) and whether it is a cache breakpoint."""
        blocks = [("tool", b) for b in body.get("tools", [])]
        blocks += [("system", b) for b in _blocks(body.get("system", []))]
        blocks += [(m["role"], b) for m in body["messages"] for b in _blocks(m["content"])]
        units = [
            (json.dumps([role, {k: v for k, v in b.items() if k != "cache_control"}]), _cached(b))
            for role, b in blocks
        ]
        if body.get("cache_control") is not None and units:
            units[-1] = (units[-1][0], True)
        return units

    def input_tokens(self, body: dict[str, Any]) -> int:
        """What count_tokens answers: a token per four characters of the request's blocks."""
        return max(1, sum(len(text) for text, _ in self._units(body)) // 4)

    def _usage(self, body: dict[str, Any], api_key: str) -> dict[str, int]:
        """Prompt caching as Anthropic does it: each breakpoint writes the prefix ending at
        it; a request reads the longest prefix written before that ends at one of its
        breakpoints or up to 20 blocks before one. Reads and writes leave input_tokens."""
        units, total = self._units(body), self.input_tokens(body)
        prefixes: list[tuple[str, int]] = []  # the hash and tokens of each prefix
        chars, hashed = 0, hashlib.sha256(body["model"].encode())
        for text, _ in units:
            chars += len(text)
            hashed.update(text.encode())
            prefixes.append((hashed.hexdigest(), chars // 4))
        ends = [i for i, (_, breakpoint) in enumerate(units) if breakpoint]
        looked = {k for end in ends for k in range(max(0, end - 19), end + 1)}
        with self._lock:
            seen = self._cache.setdefault(api_key, set())
            read = max([prefixes[k][1] for k in looked if prefixes[k][0] in seen], default=0)
            last = prefixes[ends[-1]] if ends else None
            write = last[1] - read if last and last[0] not in seen else 0
            seen.update(prefixes[end][0] for end in ends)
        return {
            "input_tokens": total - read - write,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }

    # -- answers -----------------------------------------------------------------------

    def _content(self, reply: AnthropicReply, body: dict[str, Any]) -> list[dict[str, Any]]:
        config = body.get("thinking") or {}
        thinking = reply.thinking
        unscripted = reply.thinking is None and reply.redacted_thinking is None
        if config.get("type") == "enabled" and unscripted:
            thinking = f"thinking about: {_last_user_text(body['messages'])}"
        content: list[dict[str, Any]] = []
        if thinking is not None:
            shown = "" if config.get("display") == "omitted" else thinking
            content.append({"type": "thinking", "thinking": shown, "signature": self.sign(shown)})
        if reply.redacted_thinking is not None:
            self.issued_redacted.add(reply.redacted_thinking)
            content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        for tool_id, name, arguments in reply.tool_uses:
            content.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
        return content

    def _message(self, reply: AnthropicReply, body: dict[str, Any], key: str) -> dict[str, Any]:
        content = self._content(reply, body) if body["max_tokens"] else []
        stop: str | None = reply.stop_reason or ("tool_use" if reply.tool_uses else "end_turn")
        stop = stop if body["max_tokens"] else "max_tokens"
        if reply.no_stop_reason:
            stop = None
        sequence = None
        text = next((b for b in content if b["type"] == "text"), None)
        for candidate in body.get("stop_sequences", []) if text else []:
            if candidate in text["text"]:
                text["text"] = text["text"].split(candidate)[0]
                content = [b for b in content if b["type"] != "tool_use"]
                stop, sequence = "stop_sequence", candidate
                break
        output = json.dumps([b.get("thinking") or b.get("text") or b.get("input") for b in content])
        usage = {**self._usage(body, key), "output_tokens": max(1, len(output) // 4)}
        message = {
            "id": f"msg_fake{next(self._count):016d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": sequence,
            "usage": {**usage, **(reply.usage or {})},
        }
        Message.model_validate(message, strict=True)  # never send what the SDK rejects
        return message

    @staticmethod
    def events(message: dict[str, Any], interleave: bool = False) -> list[dict[str, Any]]:
        """The SSE events that stream ``message``, in order (``ping`` included)."""
        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
        start["usage"] = {**usage, "output_tokens": 1}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        events.append({"type": "ping"})
        streams = [_block_events(index, b) for index, b in enumerate(message["content"])]
        tools = [
            s for s, b in zip(streams, message["content"], strict=True) if b["type"] == "tool_use"
        ]
        for stream in streams:
            if not (interleave and len(tools) > 1 and stream in tools):
                events += stream
        if interleave and len(tools) > 1:
            events += [s[0] for s in tools]
            rounds = itertools.zip_longest(*(s[1:-1] for s in tools))
            events += [e for each in rounds for e in each if e is not None]
            events += [s[-1] for s in tools]
        delta = {
            "stop_reason": message["stop_reason"],
            "stop_sequence": message.get("stop_sequence"),
        }
        events.append({"type": "message_delta", "delta": delta, "usage": usage})
        events.append({"type": "message_stop"})
        for event in events:
            check_stream_event(event)
        return events

    # -- routes ------------------------------------------------------------------------

    def _accept(self, request: Request, body: Any) -> tuple[dict[str, Any], AnthropicReply]:
        """The checked body of a ``/v1/messages`` request, and the reply it takes."""
        body = self._receive(request, body)
        self.check(body, betas=_betas(request))
        tokens = self.input_tokens(body)
        if self.context_window is not None and tokens > self.context_window:
            raise RequestError(
                f"prompt is too long: {tokens} tokens > {self.context_window} maximum"
            )
        with self._lock:
            if self.replies:
                return body, self.replies.popleft()
        return body, AnthropicReply(text=f"echo: {_last_user_text(body['messages'])}")

    async def messages(self, request: Request) -> Response:
        try:
            body, reply = self._accept(request, await _json(request))
        except RequestError as error:
            return self._error(error)
        if reply.status != 200:
            error = RequestError(reply.error_message, reply.status, reply.error_type)
            return self._error(error, reply.retry_after)
        message = self._message(reply, body, _api_key(request) or "")
        if body.get("stream") is not True:
            return JSONResponse(message, headers={"request-id": f"req_{message['id']}"})
        events = self.events(message, reply.interleave_tools)
        return StreamingResponse(_sse(reply, events), media_type="text/event-stream")

    async def count_tokens(self, request: Request) -> Response:
        try:
            body = self._receive(request, await _json(request))
            self.check(body, request.url.path, _betas(request))
        except RequestError as error:
            return self._error(error)
        answer = {"input_tokens": self.input_tokens(body)}
        MessageTokensCount.model_validate(answer, strict=True)
        return JSONResponse(answer)

    def _error(self, error: RequestError, retry: int | None = None) -> Response:
        request_id = f"req_fake{next(self._count):016d}"
        body = {"type": "error", "error": {"type": error.kind, "message": str(error)}}
        headers = {"request-id": request_id}
        if retry is not None or error.status == 429:
            headers["retry-after"] = str(retry or 0)
        return JSONResponse({**body, "request_id": request_id}, error.status, headers=headers)

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self.messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self.count_tokens, methods=["POST"]),
            ]
        )


# -- rules on the messages ---------------------------------------------------------------


def check_request(
    body: dict[str, Any], path: str = "/v1/messages", betas: frozenset[str] = frozenset()
) -> None:
    """Raise the ``RequestError`` the API answers ``body`` with, if any: the SDK's request
    type (strict) and the documented rules; ``context_management`` (the beta's type) only
    with its beta among ``betas``. Thinking signatures are not checked here (only the fake
    that signed them can): ``FakeAnthropic.check`` does that too."""
    adapter = CREATE_STREAMING if body.get("stream") is True else CREATE
    if not path.endswith("count_tokens"):
        _check_sampling(body)
    typed = {k: v for k, v in body.items() if k not in _SAMPLING or path.endswith("count_tokens")}
    if CONTEXT_BETA in betas and "context_management" in body:
        try:
            CONTEXT_MANAGEMENT.validate_python(typed.pop("context_management"), strict=True)
        except pydantic.ValidationError as error:
            raise RequestError("context_management." + _validation_message(error)) from None
    try:
        (COUNT if path.endswith("count_tokens") else adapter).validate_python(typed, strict=True)
    except pydantic.ValidationError as error:
        raise RequestError(_validation_message(error)) from None
    if body.get("max_tokens", 0) < 0:
        raise RequestError("max_tokens: Input should be greater than or equal to 0")
    _check_roles(body["messages"])
    _check_tool_names(body.get("tools", []))
    _check_tools(body["messages"])
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(_blocks(message["content"])):
            _check_media(block, f"messages.{i}.content.{j}")
    _check_thinking(body)
    found = sum(map(_cached, [*body.get("tools", []), *_blocks(body.get("system", []))]))
    found += sum(_cached(b) for m in body["messages"] for b in _blocks(m["content"]))
    found += body.get("cache_control") is not None
    if found > 4:
        raise RequestError(
            f"A maximum of 4 blocks with cache_control may be provided. Found {found}."
        )


def check_stream_event(event: dict[str, Any]) -> None:
    """Validate one streamed event: the SDK's ``RawMessageStreamEvent``, or a ping, or an
    error event (which the SDK raises as an ``APIStatusError``)."""
    if event.get("type") == "error":
        ERROR_EVENT.validate_python(event, strict=True)
    elif event.get("type") != "ping" or set(event) != {"type"}:
        EVENT.validate_python(event, strict=True)


def _check_sampling(body: dict[str, Any]) -> None:
    """``temperature``, ``top_p`` and ``top_k``, which the SDK's types no longer carry but
    the models before Claude Opus 4.7 take: the first two from 0 to 1, ``top_k`` a whole
    number from 0; with thinking, no temperature but 1, a top_p from 0.95, no top_k."""
    if "top_k" in body:
        if isinstance(body["top_k"], bool) or not isinstance(body["top_k"], int):
            raise RequestError("top_k: Input should be a valid integer")
        if body["top_k"] < 0:
            raise RequestError("top_k: Input should be greater than or equal to 0")
    for key in (k for k in ("temperature", "top_p") if k in body):
        value = body[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RequestError(f"{key}: Input should be a valid number")
        if not 0 <= value <= 1:
            raise RequestError(f"{key}: Input should be between 0 and 1")
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
        return
    if "top_k" in body:
        raise RequestError("`top_k` may not be set when thinking is enabled.")
    if body.get("temperature", 1) != 1:
        raise RequestError("`temperature` may only be set to 1 when thinking is enabled.")
    if body.get("top_p", 1) < 0.95:
        raise RequestError(
            "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled."
        )


def _check_thinking(body: dict[str, Any]) -> None:
    config = body.get("thinking") or {"type": "disabled"}
    if config["type"] == "enabled":
        budget = config["budget_tokens"]
        if budget < 1024:
            raise RequestError(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if "max_tokens" in body and budget >= body["max_tokens"]:
            raise RequestError("`max_tokens` must be greater than `thinking.budget_tokens`.")
    forced = (body.get("tool_choice") or {}).get("type") in ("any", "tool")
    if forced and config["type"] in ("enabled", "adaptive"):
        raise RequestError("Thinking may not be enabled when tool_choice forces tool use.")
    messages = body["messages"]
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if config["type"] != "enabled" or not assistants:
        return
    final = _blocks(messages[assistants[-1]]["content"])
    uses = any(b["type"] == "tool_use" for b in final)
    if uses and final[0]["type"] not in _THINKING_TYPES:
        where = f"messages.{assistants[-1]}.content.0.type"
        raise RequestError(f"{where}: {_THINKING_FIRST.format(found=final[0]['type'])}")


def _check_roles(messages: list[dict[str, Any]]) -> None:
    if not messages:
        raise RequestError("messages: at least one message is required")
    for i, message in enumerate(messages):
        if message["role"] not in ("user", "assistant"):
            raise RequestError(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if i and message["role"] == messages[i - 1]["role"]:
            raise RequestError(
                'messages: roles must alternate between "user" and "assistant", '
                f'but found multiple "{message["role"]}" roles in a row'
            )
        blocks = _blocks(message["content"])
        if not blocks and i != len(messages) - 1:
            raise RequestError(
                f"messages.{i}: all messages must have non-empty content except for the"
                " optional final assistant message"
            )
        if any(b["type"] == "text" and not b["text"].strip() for b in blocks):
            raise RequestError("messages: text content blocks must contain non-whitespace text")
        for j, block in enumerate(blocks):
            if block["type"] in ("image", "document") and message["role"] != "user":
                raise RequestError(
                    f"messages.{i}.content.{j}: {block['type']} blocks are only supported in"
                    " user messages"
                )
    if messages[0]["role"] != "user":
        raise RequestError('messages: first message must use the "user" role')


def _check_tool_names(tools: list[dict[str, Any]]) -> None:
    names = [tool["name"] for tool in tools]
    for i, tool in enumerate(tools):
        if tool.get("type") not in (None, "custom"):
            continue
        if not _TOOL_NAME.match(tool["name"]):
            raise RequestError(
                f"tools.{i}.custom.name: String should match pattern '{_TOOL_NAME.pattern}'"
            )
        schema = tool["input_schema"]
        if "type" not in schema:
            raise RequestError(f"tools.{i}.custom.input_schema.type: Field required")
        if schema["type"] != "object":
            raise RequestError(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
    if len(set(names)) != len(names):
        raise RequestError("tools: Tool names must be unique.")


def _check_tools(messages: list[dict[str, Any]]) -> None:
    """Tool ids well formed; tool_result blocks first in their message, each answering a
    tool_use of the message before; every tool_use answered in the message after."""
    for i, blocks in enumerate(_blocks(m["content"]) for m in messages):
        asked = {b["id"] for b in _blocks(messages[i - 1]["content"]) if b["type"] == "tool_use"}
        for j, block in enumerate(blocks):
            where, kind = f"messages.{i}.content.{j}", block["type"]
            key = {"tool_use": "id", "tool_result": "tool_use_id"}.get(kind)
            if key and not _TOOL_ID.match(block[key]):
                raise RequestError(
                    f"{where}.{kind}.{key}: String should match pattern '{_TOOL_ID.pattern}'"
                )
            if kind == "tool_result" and j and blocks[j - 1]["type"] != "tool_result":
                raise RequestError(
                    f"{where}: `tool_result` blocks must come first in the user message"
                    " content, before any other block"
                )
            if kind == "tool_result" and (not i or block["tool_use_id"] not in asked):
                raise RequestError(
                    f"{where}: unexpected `tool_use_id` found in `tool_result` blocks:"
                    f" {block['tool_use_id']}. Each `tool_result` block must have a"
                    " corresponding `tool_use` block in the previous message."
                )
    for i, message in enumerate(messages):
        uses = [b["id"] for b in _blocks(message["content"]) if b["type"] == "tool_use"]
        if len(set(uses)) != len(uses):
            raise RequestError(f"messages.{i}: `tool_use` ids must be unique")
        after = _blocks(messages[i + 1]["content"]) if i + 1 < len(messages) else []
        answered = {b["tool_use_id"] for b in after if b["type"] == "tool_result"}
        if missing := [u for u in uses if u not in answered]:
            raise RequestError(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks"
                f" immediately after: {', '.join(missing)}. Each `tool_use` block must have a"
                " corresponding `tool_result` block in the next message."
            )


def _check_media(block: dict[str, Any], where: str) -> None:
    if block["type"] == "tool_result":
        for j, inner in enumerate(_blocks(block.get("content") or [])):
            _check_media(inner, f"{where}.tool_result.content.{j}")
    source = block.get("source") if block["type"] in ("image", "document") else None
    if not source:
        return
    where = f"{where}.{block['type']}.source.{source['type']}"
    if source["type"] == "url" and not source["url"].startswith("https://"):
        raise RequestError(f"{where}.url: URL must use https")
    if source["type"] != "base64":
        return
    try:
        data = base64.b64decode(source["data"], validate=True)
    except binascii.Error:
        raise RequestError(f"{where}.data: invalid base64 data") from None
    if not data.startswith(_MAGIC[source["media_type"]]):
        kind = "Image" if block["type"] == "image" else "Document"
        raise RequestError(f"{kind} does not match the provided media type {source['media_type']}")


def _betas(request: Request) -> frozenset[str]:
    """The betas a request's ``anthropic-beta`` header names."""
    header = request.headers.get("anthropic-beta") or ""
    return frozenset(name.strip() for name in header.split(",") if name.strip())


def _api_key(request: Request) -> str | None:
    """The key of ``x-api-key``, or of ``Authorization: Bearer`` (as the SDK sends it)."""
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    return request.headers.get("x-api-key") or bearer or None


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        return None


async def _sse(reply: AnthropicReply, events: list[dict[str, Any]]) -> AsyncIterator[bytes]:
    for number, event in enumerate(events):
        if reply.break_after is not None and number >= reply.break_after:
            raise ConnectionResetError("the fake Anthropic drops the stream")
        if reply.stream_error_after is not None and number >= reply.stream_error_after:
            yield f"event: error\ndata: {json.dumps(_OVERLOADED)}\n\n".encode()
            return
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """content_block_start, its deltas, content_block_stop, for one block of an answer."""
    kind, deltas = block["type"], []
    start = {**block}
    if kind == "thinking":
        start |= {"thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        start["text"] = ""
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
    elif kind == "tool_use":
        start["input"] = {}
        arguments = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments)]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]
