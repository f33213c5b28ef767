"""A streamed turn's Responses events -> Messages API stream events. Pure, per request.

``message_start`` (and a ``ping``) open the stream; each output item becomes content blocks
(text as ``text_delta``, reasoning as ``thinking_delta`` then the block's
``signature_delta`` once the item is done, a function call as ``tool_use`` with
``input_json_delta``); the terminal event becomes ``message_delta`` with the stop reason and
the usage, then ``message_stop``, or, for a failed turn, the open block's
``content_block_stop`` and an ``error`` event. Text that could be
the start of a stop sequence is held back until the next delta tells.
"""

from __future__ import annotations

from session import Item

from .request import stop_cut
from .response import early_stop, message_id, messages_usage
from .thinking import ThinkingSeals

Out = tuple[str, Item]
_TEXT_DELTAS = frozenset({"response.output_text.delta", "response.refusal.delta"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_INVALID_CODES = frozenset({"context_length_exceeded", "invalid_prompt"})


def stream_error_type(error: Item) -> str:
    """Anthropic's error type for a failed turn's ``error`` (its code, and the words an
    overloaded provider's failure is told in)."""
    code = str(error.get("code") or "")
    if code == "rate_limit_exceeded":
        return "rate_limit_error"
    if code in _INVALID_CODES or code.startswith(("invalid_", "image_")):
        return "invalid_request_error"
    if "overloaded" in str(error.get("message") or "").lower():
        return "overloaded_error"
    return "api_error"


class MessagesStream:
    """Feed it every Responses event in order; it returns the Messages events each makes."""

    def __init__(
        self, model: str, seals: ThinkingSeals, stop_sequences: list[str] | None = None
    ) -> None:
        self._model = model
        self._seals = seals
        self._stops = [s for s in stop_sequences or () if s]
        self._index = -1  # of the last block started
        self._open: tuple[str, int] | None = None  # (block type, output index)
        self._held = ""  # text held back: it may begin a stop sequence
        self._thinking_text: set[int] = set()  # reasoning items with reasoning_text deltas
        self._used_tools = False
        self.stop_sequence: str | None = None
        self.ended = False

    # -- blocks --------------------------------------------------------------------------

    def _start(self, block: Item, kind: str, output: int) -> list[Out]:
        closing = self._close()
        self._index += 1
        self._open = (kind, output)
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        return [*closing, ("content_block_start", start)]

    def _delta(self, delta: Item) -> Out:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": self._index, "delta": delta},
        )

    def _close(self) -> list[Out]:
        if self._open is None:
            return []
        events = []
        if self._held:
            events.append(self._delta({"type": "text_delta", "text": self._held}))
            self._held = ""
        self._open = None
        stop = {"type": "content_block_stop", "index": self._index}
        return [*events, ("content_block_stop", stop)]

    def _text(self, output: int, text: str) -> list[Out]:
        events = []
        if self._open != ("text", output):
            events = self._start({"type": "text", "text": ""}, "text", output)
        held = self._held + text
        if self._stops:
            held, self.stop_sequence = stop_cut(held, self._stops)
            keep = 0 if self.stop_sequence else self._prefix_length(held)
            self._held = held[len(held) - keep :] if keep else ""
            held = held[: len(held) - keep]
        else:
            self._held = ""
        if held:
            events.append(self._delta({"type": "text_delta", "text": held}))
        if self.stop_sequence is not None:
            events += self._close()
        return events

    def _prefix_length(self, text: str) -> int:
        """The longest end of ``text`` that some stop sequence begins with."""
        longest = 0
        for sequence in self._stops:
            for size in range(min(len(sequence) - 1, len(text)), longest, -1):
                if sequence.startswith(text[-size:]):
                    longest = size
                    break
        return longest

    def _thinking(self, output: int, text: str) -> list[Out]:
        events = []
        if self._open != ("thinking", output):
            block = {"type": "thinking", "thinking": "", "signature": ""}
            events = self._start(block, "thinking", output)
        return [*events, self._delta({"type": "thinking_delta", "thinking": text})]

    def _reasoning_done(self, output: int, item: Item) -> list[Out]:
        events: list[Out] = []
        for block in self._seals.blocks(item):
            if block["type"] == "thinking":
                if self._open != ("thinking", output):
                    events += self._thinking(output, str(block.get("thinking") or ""))
                signature = str(block.get("signature") or "")
                events.append(self._delta({"type": "signature_delta", "signature": signature}))
            else:  # redacted_thinking: whole in its start
                events += self._start(dict(block), block["type"], output)
            events += self._close()
        return events

    # -- events --------------------------------------------------------------------------

    def event(self, event: Item) -> list[Out]:
        kind = event.get("type")
        if kind == "response.created":
            response = event.get("response") or {}
            message: Item = {
                "id": message_id(str(response.get("id") or "")),
                "type": "message",
                "role": "assistant",
                "model": self._model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": messages_usage(None),
            }
            return [
                ("message_start", {"type": "message_start", "message": message}),
                ("ping", {"type": "ping"}),
            ]
        if kind in _TERMINAL:
            return self._end(event)
        if self.stop_sequence is not None or self.ended:
            return []  # what follows a stop sequence is not the client's
        output = event.get("output_index")
        output = output if isinstance(output, int) else -1
        if kind in _TEXT_DELTAS:
            return self._text(output, str(event.get("delta") or ""))
        if kind == "response.reasoning_text.delta":
            self._thinking_text.add(output)
            return self._thinking(output, str(event.get("delta") or ""))
        if kind == "response.reasoning_summary_text.delta" and output not in self._thinking_text:
            return self._thinking(output, str(event.get("delta") or ""))
        if kind == "response.function_call_arguments.delta":
            return [
                self._delta(
                    {"type": "input_json_delta", "partial_json": str(event.get("delta") or "")}
                )
            ]
        item = event.get("item") or {}
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            self._used_tools = True
            block: Item = {
                "type": "tool_use",
                "id": item.get("call_id"),
                "name": item.get("name"),
                "input": {},
            }
            return self._start(block, "tool_use", output)
        if kind == "response.output_item.done":
            if item.get("type") == "reasoning":
                return self._reasoning_done(output, item)
            if self._open is not None and self._open[1] == output:
                return self._close()
        return []

    def _end(self, event: Item) -> list[Out]:
        self.ended = True
        response = event.get("response") or {}
        events = self._close()  # a block begun ends, even before an error
        if event.get("type") == "response.failed":
            error = response.get("error") or {}
            message = str(error.get("message") or "The model's answer failed.")
            kind = stream_error_type(error)
            failure = {"type": "error", "error": {"type": kind, "message": message}}
            return [*events, ("error", failure)]
        if self.stop_sequence is not None:
            reason = "stop_sequence"
        else:
            reason = early_stop(response) or ("tool_use" if self._used_tools else "end_turn")
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": self.stop_sequence},
            "usage": messages_usage(response.get("usage")),
        }
        return [*events, ("message_delta", delta), ("message_stop", {"type": "message_stop"})]
