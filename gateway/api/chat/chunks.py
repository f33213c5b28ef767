"""A streamed turn's Responses events -> ``chat.completion.chunk`` objects, with no I/O.

The first chunk names the assistant's role; text, refusals, reasoning (as
``reasoning_content``) and tool calls follow as deltas; the turn's terminal event gives
the chunk with the finish reason and, with ``stream_options.include_usage``, one more with
no choices and the usage. A failed turn ends in an ``error`` object, as OpenAI's streams do.
"""

from __future__ import annotations

from typing import Any

from session import Item

from .completion import chat_logprob, chat_usage, completion_id, finish_reason

_CALLS = ("function_call", "custom_tool_call")
_ARGUMENTS = {"function_call": "arguments", "custom_tool_call": "input"}


class ChunkTranslator:
    """Created per stream; feed it the turn's events in order."""

    def __init__(self, model: str, *, include_usage: bool = False, logprobs: bool = False) -> None:
        self._model = model
        self._include_usage = include_usage
        self._logprobs = logprobs
        self._id = completion_id("")
        self._created = 0
        self._calls: dict[str, tuple[int, str]] = {}  # item id -> tool index, its kind
        self._sent: dict[str, int] = {}  # item id -> characters of text or arguments sent
        self._reasoned: set[str] = set()  # reasoning items that streamed their own text
        self.ended = False

    def _chunk(self, delta: Item, logprobs: list[Item] | None = None) -> Item:
        choice: Item = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        if logprobs is not None and self._logprobs:
            choice["logprobs"] = {"content": logprobs, "refusal": None}
        return self._envelope([choice])

    def _envelope(self, choices: list[Item]) -> Item:
        chunk: Item = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": None,
        }
        if self._include_usage:
            chunk["usage"] = None
        return chunk

    def event(self, event: Item) -> list[Item]:
        """The chunks one event makes (often none)."""
        kind = event.get("type")
        if kind == "response.created":
            response = event.get("response") or {}
            self._id = completion_id(str(response.get("id", "")))
            self._created = int(response.get("created_at") or 0)
            return [self._chunk({"role": "assistant", "content": "", "refusal": None})]
        if kind == "response.output_text.delta":
            return self._text(event, str(event.get("delta", "")), event.get("logprobs"))
        if kind == "response.output_text.done":  # text no delta carried (a replayed answer)
            rest = str(event.get("text", ""))[self._sent.get(self._key(event), 0) :]
            return self._text(event, rest, event.get("logprobs")) if rest else []
        if kind == "response.refusal.delta":
            return [self._chunk({"refusal": event.get("delta", "")})]
        if kind == "response.reasoning_text.delta":
            self._reasoned.add(str(event.get("item_id")))
            return [self._chunk({"reasoning_content": event.get("delta", "")})]
        if kind == "response.reasoning_summary_text.delta":
            if str(event.get("item_id")) in self._reasoned:
                return []
            return [self._chunk({"reasoning_content": event.get("delta", "")})]
        if kind == "response.output_item.added":
            return self._call_added(event.get("item") or {})
        if kind in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            return self._arguments(str(event.get("item_id")), str(event.get("delta", "")))
        if kind == "response.output_item.done":
            item = event.get("item") or {}
            if item.get("type") in _CALLS and str(item.get("id")) in self._calls:
                full = str(item.get(_ARGUMENTS[item["type"]], ""))
                rest = full[self._sent.get(str(item.get("id")), 0) :]
                return self._arguments(str(item.get("id")), rest) if rest else []
            return []
        if kind in ("response.completed", "response.incomplete"):
            return self._end(event.get("response") or {})
        if kind in ("response.failed", "error"):
            self.ended = True
            error = (event.get("response") or {}).get("error") or event
            return [_error(error)]
        return []

    @staticmethod
    def _key(event: Item) -> str:
        return f"{event.get('item_id')}:{event.get('content_index', 0)}"

    def _text(self, event: Item, text: str, logprobs: Any) -> list[Item]:
        key = self._key(event)
        self._sent[key] = self._sent.get(key, 0) + len(text)
        tokens = [chat_logprob(entry) for entry in logprobs or [] if isinstance(entry, dict)]
        return [self._chunk({"content": text}, tokens)]

    def _call_added(self, item: Item) -> list[Item]:
        kind = item.get("type")
        if kind not in _CALLS:
            return []
        index = len(self._calls)
        self._calls[str(item.get("id"))] = (index, str(kind))
        call: Item = {"index": index, "id": item.get("call_id", "")}
        if kind == "function_call":
            call |= {
                "type": "function",
                "function": {"name": item.get("name", ""), "arguments": ""},
            }
        else:
            call |= {"type": "custom", "custom": {"name": item.get("name", ""), "input": ""}}
        return [self._chunk({"tool_calls": [call]})]

    def _arguments(self, item_id: str, delta: str) -> list[Item]:
        if item_id not in self._calls or not delta:
            return []
        index, kind = self._calls[item_id]
        self._sent[item_id] = self._sent.get(item_id, 0) + len(delta)
        piece = (
            {"function": {"arguments": delta}}
            if kind == "function_call"
            else {"custom": {"input": delta}}
        )
        return [self._chunk({"tool_calls": [{"index": index, **piece}]})]

    def _end(self, response: Item) -> list[Item]:
        self.ended = True
        reason = finish_reason(response, bool(self._calls))
        choice = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": reason}
        chunks = [self._envelope([choice])]
        if self._include_usage:
            chunks.append({**self._envelope([]), "usage": chat_usage(response.get("usage"))})
        return chunks


def _error(error: Item) -> Item:
    """A failed turn's error as OpenAI puts one in a stream."""
    code = error.get("code")
    message = error.get("message") or "The upstream provider failed to answer."
    return {
        "error": {
            "message": str(message),
            "type": "server_error",
            "param": None,
            "code": str(code) if code is not None else "server_error",
        }
    }
