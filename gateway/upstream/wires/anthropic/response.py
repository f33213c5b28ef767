"""Messages API answers and stream events -> Responses events and a result. Pure.

A content block is followed by its ``index``, so deltas of parallel tool calls never mix;
each thinking block becomes one ``reasoning`` item whose ``encrypted_content`` seals the
block (its signature arrives last) for the next turn to send back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ...errors import MalformedAnswer
from ...reasoning_state import ReasoningState
from ...results import Event, Item, TurnResult, complete_usage
from ...translation.output_builder import OutputBuilder, ToolName

# Stop reasons that end a response early, as the builder's (chat) finish reasons.
_FINISH_REASONS = {"max_tokens": "length", "refusal": "content_filter"}
CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"'{where}' is not an object")
    return value


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def responses_usage(usage: Mapping[str, Any]) -> Item | None:
    """Messages usage -> Responses usage: input counts cache reads and writes too (the
    API's ``input_tokens`` counts neither), cached tokens are the reads."""
    read = _int(usage.get("cache_read_input_tokens"))
    written = _int(usage.get("cache_creation_input_tokens"))
    details = usage.get("output_tokens_details") or {}
    return complete_usage(
        {
            "input_tokens": _int(usage.get("input_tokens")) + read + written,
            "output_tokens": _int(usage.get("output_tokens")),
            "input_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
            "output_tokens_details": {"reasoning_tokens": _int(details.get("thinking_tokens"))},
        }
    )


class MessagesTranslator:
    """Created per request; feed it a whole message or its stream events in order."""

    def __init__(
        self,
        state: ReasoningState,
        tool_names: Mapping[str, ToolName] | None = None,
        reasoning_summary: bool = False,
    ) -> None:
        self._builder = OutputBuilder(tool_names, reasoning_summary)
        self._state = state
        self._blocks: dict[int, Item] = {}  # open content blocks by index
        self._thinking: dict[int, list[str]] = {}
        self._arguments: dict[int, bool] = {}  # tool_use blocks: whether input arrived
        self._usage: dict[str, Any] = {}
        self.stop_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    # -- a whole message -----------------------------------------------------------------

    def message(self, message: Any) -> list[Event]:
        message = _object(message, "message")
        if message.get("type") != "message" or not isinstance(message.get("content"), list):
            raise MalformedAnswer("the answer is not a message with content")
        self._usage = dict(_object(message.get("usage") or {}, "message.usage"))
        events: list[Event] = []
        for index, block in enumerate(message["content"]):
            events += self._start(index, _object(block, f"message.content[{index}]"))
            events += self._stop(index)
        if not message.get("stop_reason"):  # always set on a whole answer
            raise MalformedAnswer("the message has no stop_reason")
        self.stop_reason = str(message["stop_reason"])
        return events

    # -- a stream ------------------------------------------------------------------------

    def event(self, event: Any) -> list[Event]:
        """One server-sent event's data -> the Responses events it completes."""
        event = _object(event, "event")
        kind = event.get("type")
        if kind == "message_start":
            message = _object(event.get("message"), "message_start.message")
            self._usage = dict(_object(message.get("usage") or {}, "message.usage"))
            return []
        if kind == "content_block_start":
            block = _object(event.get("content_block"), "content_block_start.content_block")
            return self._start(self._index(event), block)
        if kind == "content_block_delta":
            return self._delta(self._index(event), _object(event.get("delta"), "delta"))
        if kind == "content_block_stop":
            return self._stop(self._index(event))
        if kind == "message_delta":
            delta = _object(event.get("delta") or {}, "message_delta.delta")
            if delta.get("stop_reason"):  # else the stream has not said why it ends
                self.stop_reason = str(delta["stop_reason"])
            usage = _object(event.get("usage") or {}, "message_delta.usage")
            self._usage.update({k: v for k, v in usage.items() if v is not None})
        return []  # ping, message_stop, and event types added later

    @staticmethod
    def _index(event: Mapping[str, Any]) -> int:
        index = event.get("index")
        if not isinstance(index, int):
            raise MalformedAnswer(f"a {event.get('type')} event has no index")
        return index

    def _start(self, index: int, block: Mapping[str, Any]) -> list[Event]:
        kind = block.get("type")
        self._blocks[index] = dict(block)
        builder = self._builder
        if kind == "thinking":
            self._thinking[index] = []
            return self._delta(index, {"type": "thinking_delta", "thinking": block.get("thinking")})
        if kind == "redacted_thinking":
            sealed = self._state.seal({"blocks": [dict(block)]})
            return builder.reasoning_end(sealed)
        if kind == "text":
            return builder.text(str(block.get("text") or ""))
        if kind == "tool_use":
            given = block.get("input")
            arguments = orjson.dumps(given).decode() if given else ""
            self._arguments[index] = bool(arguments)
            name = block.get("name")
            call_id = block.get("id")
            return builder.tool_call(
                index,
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else None,
                arguments,
            )
        return []  # server tool blocks and the like: never asked for

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[Event]:
        kind = delta.get("type")
        block = self._blocks.get(index)
        if block is None:
            raise MalformedAnswer(f"a delta for content block {index}, which is not open")
        if kind == "thinking_delta":
            text = str(delta.get("thinking") or "")
            self._thinking[index].append(text)
            return self._builder.reasoning(text)
        if kind == "signature_delta":
            block["signature"] = str(delta.get("signature") or "")
        elif kind == "text_delta":
            return self._builder.text(str(delta.get("text") or ""))
        elif kind == "input_json_delta":
            piece = str(delta.get("partial_json") or "")
            self._arguments[index] = self._arguments.get(index, False) or bool(piece)
            return self._builder.tool_call(index, None, None, piece)
        return []

    def _stop(self, index: int) -> list[Event]:
        block = self._blocks.pop(index, None)
        if block is None:
            return []
        if block.get("type") == "thinking":
            text = "".join(self._thinking.pop(index))  # every piece went out as it came
            thought = {
                "type": "thinking",
                "thinking": text,
                "signature": block.get("signature", ""),
            }
            return self._builder.reasoning_end(self._state.seal({"blocks": [thought]}))
        if block.get("type") == "tool_use" and not self._arguments.pop(index, True):
            return self._builder.tool_call(index, None, None, "{}")  # a call with no input
        return []

    # -- the end -------------------------------------------------------------------------

    def usage(self) -> Item | None:
        return responses_usage(self._usage) if self._usage else None

    def finish(self) -> tuple[list[Event], TurnResult]:
        reason = self.stop_reason or "end_turn"
        events, result = self._builder.finish(_FINISH_REASONS.get(reason), self.usage())
        # Messages usage names the tier used: "standard", "priority" or "batch".
        tier = self._usage.get("service_tier")
        result.service_tier = "priority" if tier == "priority" else "default"
        if reason == CONTEXT_WINDOW_EXCEEDED:
            result.status = "failed"
            result.error = {
                "code": "context_length_exceeded",
                "message": "The model's context window was exceeded while it answered.",
            }
        return events, result

    def fail(self, message: str) -> tuple[list[Event], TurnResult]:
        events, result = self._builder.fail(message)
        result.usage = self.usage()
        return events, result
