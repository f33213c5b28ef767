"""A per-request state machine: text, reasoning and tool-call fragments -> Responses events.

Chat Completions chunks and the echo model are both reduced to these fragments, so one
machine builds every output item and every stream event, streamed or not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from session import new_id

from ..results import Event, Item, TurnResult, TurnStatus, failed_result
from .builtin_tools import native_call

# Chat finish reasons that end a response early, and how Responses reports them.
INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


@dataclass(frozen=True)
class ToolName:
    """A tool as the client knows it: its name, namespace, and whether it is ``custom``
    or a built-in (``builtin``: its tool type, such as ``shell``).

    A custom (free-form input) tool is offered to a chat upstream as a function taking one
    string, ``input``; its calls go back to the client as ``custom_tool_call`` items. A
    built-in's calls go back as its own items (``shell_call``, …; see
    :mod:`.builtin_tools`).
    """

    name: str
    namespace: str | None = None
    custom: bool = False
    builtin: str | None = None


def custom_input(arguments: str) -> str:
    """The free-form input carried by a custom tool's function arguments."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    value = parsed.get("input") if isinstance(parsed, dict) else None
    return value if isinstance(value, str) else arguments


def snapshot(item: Item) -> Item:
    """A copy of ``item`` as it is now: its text or status set later does not reach it.

    Items are flat but for their list of content (or summary) parts, which are flat too;
    that is all the builder ever changes, so copying two levels is enough.
    """
    copied = dict(item)
    for key in ("content", "summary"):
        if isinstance(copied.get(key), list):
            copied[key] = [dict(part) for part in copied[key]]
    return copied


class OutputBuilder:
    """Feed fragments in arrival order; read events as they come and the result at the end."""

    def __init__(
        self, tool_names: Mapping[str, ToolName] | None = None, reasoning_summary: bool = False
    ) -> None:
        """``reasoning_summary``: the client asked for one, so reasoning text is its summary too."""
        self.output: list[Item] = []
        self._tool_names = tool_names or {}
        self._reasoning_summary = reasoning_summary
        self._text_index: int | None = None
        self._reasoning_index: int | None = None
        self._tool_indexes: dict[int, int] = {}  # upstream tool-call index -> output index
        # Built-in tool calls by upstream index: their item is made (and added) once the
        # arguments are complete, for it holds them parsed (``action``, ``operation``).
        self._deferred: dict[int, tuple[str, str, list[str]]] = {}  # (call id, type, pieces)
        # The fragments of each open item's text (or arguments), by output index, joined
        # once it closes: growing a string or list in place copies all of it every time.
        self._pieces: dict[int, list[str]] = {}
        self._logprobs: list[Item] = []  # those of the open message's text

    # -- fragments ---------------------------------------------------------------------

    def reasoning(self, text: str) -> list[Event]:
        if not text:
            return []
        events = [] if self._reasoning_index is not None else self._open_reasoning()
        index = self._reasoning_index
        assert index is not None
        self._pieces[index].append(text)
        events.append(self._delta("response.reasoning_text.delta", index, text, part=True))
        if self._reasoning_summary:
            delta = self._delta("response.reasoning_summary_text.delta", index, text)
            events.append({**delta, "summary_index": 0})
        return events

    def reasoning_end(self, encrypted_content: str | None = None) -> list[Event]:
        """Close the open reasoning item (opening an empty one if none is open), with the
        provider's opaque state for the next turn: one item per thinking block."""
        events = [] if self._reasoning_index is not None else self._open_reasoning()
        index = self._reasoning_index
        assert index is not None
        if encrypted_content is not None:
            self.output[index]["encrypted_content"] = encrypted_content
        self._reasoning_index = None
        return [*events, *self._close_reasoning(index, "completed")]

    def text(self, text: str, logprobs: list[Item] | None = None) -> list[Event]:
        """Output text, with the log probabilities of its tokens when the upstream sent them."""
        if not text:
            return []
        events = [] if self._text_index is not None else self._open_message()
        index = self._text_index
        assert index is not None
        self._pieces[index].append(text)
        if logprobs:
            self._logprobs.extend(logprobs)
        delta = self._delta("response.output_text.delta", index, text, part=True)
        return [*events, {**delta, "logprobs": logprobs or []}]

    def tool_call(
        self, position: int, call_id: str | None, name: str | None, arguments: str
    ) -> list[Event]:
        """A fragment of a function (or custom) tool call, ``position`` its upstream index.

        Every call comes back: ``max_tool_calls`` limits calls to built-in tools alone,
        and those are never built here.
        """
        events: list[Event] = []
        if position in self._deferred:
            self._deferred[position][2].append(arguments)
            return events
        known = self._tool_names.get(name or "")
        if position not in self._tool_indexes and known is not None and known.builtin:
            if self._text_index is not None or self._reasoning_index is not None:
                events = self._close_all("completed")
            self._deferred[position] = (call_id or new_id("call"), known.builtin, [arguments])
            return events
        if position not in self._tool_indexes:
            events = self._open_tool_call(position, call_id, name)
        index = self._tool_indexes[position]
        item = self.output[index]
        if item["type"] == "custom_tool_call":
            self._pieces[index].append(arguments)  # decoded once complete
            return events
        if not item["name"] and name:
            item.update(self._client_name(name))
        if arguments:
            self._pieces[index].append(arguments)
            events.append(self._delta("response.function_call_arguments.delta", index, arguments))
        return events

    # -- endings -----------------------------------------------------------------------

    def finish(
        self, finish_reason: str | None, usage: Item | None
    ) -> tuple[list[Event], TurnResult]:
        """Close every open item and return the closing events and the result."""
        reason = INCOMPLETE_REASONS.get(finish_reason or "")
        status: TurnStatus = "incomplete" if reason else "completed"
        events = self._close_all(status)
        details = {"reason": reason} if reason else None
        result = TurnResult(
            status=status,
            output=self.output,
            usage=usage,
            incomplete_details=details,
        )
        return events, result

    def fail(self, message: str) -> tuple[list[Event], TurnResult]:
        """Close what is open as incomplete and return a failed result."""
        events = self._close_all("incomplete")
        return events, failed_result(message, self.output)

    # -- items -------------------------------------------------------------------------

    def _client_name(self, flat_name: str) -> Item:
        known = self._tool_names.get(flat_name)
        if known is None:
            return {"name": flat_name}
        named: Item = {"name": known.name}
        if known.namespace is not None:
            named["namespace"] = known.namespace
        return named

    def _add(self, item: Item) -> tuple[int, Event]:
        self.output.append(item)
        index = len(self.output) - 1
        return index, {
            "type": "response.output_item.added",
            "output_index": index,
            "item": snapshot(item),
        }

    def _open_reasoning(self) -> list[Event]:
        events = self._close_all("completed")
        item = {"id": new_id("rs"), "type": "reasoning", "summary": [], "status": "in_progress"}
        index, added = self._add({**item, "content": []})
        self._reasoning_index = index
        self._pieces[index] = []
        part = {"type": "reasoning_text", "text": ""}
        self.output[index]["content"].append(dict(part))
        events += [added, self._part_event("response.content_part.added", index, part)]
        if self._reasoning_summary:
            summary = {"type": "summary_text", "text": ""}
            events.append(
                self._summary_event("response.reasoning_summary_part.added", index, summary)
            )
        return events

    def _open_message(self) -> list[Event]:
        events = self._close_all("completed")
        item = {
            "id": new_id("msg"),
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        index, added = self._add(item)
        self._text_index = index
        self._pieces[index] = []
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self.output[index]["content"].append(dict(part))
        return [*events, added, self._part_event("response.content_part.added", index, part)]

    def _open_tool_call(self, position: int, call_id: str | None, name: str | None) -> list[Event]:
        events: list[Event] = []
        if self._text_index is not None or self._reasoning_index is not None:
            events = self._close_all("completed")
        item = {
            "id": new_id("fc"),
            "type": "function_call",
            "call_id": call_id or new_id("call"),
            "name": "",
            "arguments": "",
            "status": "in_progress",
        }
        if name:
            item.update(self._client_name(name))
        known = self._tool_names.get(name or "")
        if known is not None and known.custom:
            item = {"id": new_id("ctc"), "type": "custom_tool_call", "call_id": item["call_id"]}
            item.update(self._client_name(name or ""), input="")
        index, added = self._add(item)
        self._tool_indexes[position] = index
        self._pieces[index] = []
        return [*events, added]

    def _close_all(self, status: str) -> list[Event]:
        events: list[Event] = []
        if self._reasoning_index is not None:
            index, self._reasoning_index = self._reasoning_index, None
            events += self._close_reasoning(index, status)
        if self._text_index is not None:
            index, self._text_index = self._text_index, None
            events += self._close_message(index, status)
        for index in sorted(self._tool_indexes.values()):
            item = self.output[index]
            if item["type"] == "custom_tool_call":
                item["input"] = custom_input(self._joined(index))
                events.append(
                    self._delta("response.custom_tool_call_input.delta", index, item["input"])
                )
                events.append(
                    self._done("response.custom_tool_call_input.done", index, input=item["input"])
                )
                events.append(self._item_done(index))
                continue
            item["arguments"] = self._joined(index)
            events.append(
                self._done(
                    "response.function_call_arguments.done", index, arguments=item["arguments"]
                )
            )
            events += self._close_item(index, status)
        self._tool_indexes.clear()
        for position in sorted(self._deferred):
            call_id, kind, pieces = self._deferred[position]
            index, added = self._add(native_call(kind, call_id, "".join(pieces), status))
            events += [added, self._item_done(index)]
        self._deferred.clear()
        return events

    def _close_message(self, index: int, status: str) -> list[Event]:
        part = self.output[index]["content"][0]
        part["text"] = self._joined(index)
        part["logprobs"], self._logprobs = self._logprobs, []
        done = self._done("response.output_text.done", index, text=part["text"], part=True)
        return [
            {**done, "logprobs": list(part["logprobs"])},
            self._part_event("response.content_part.done", index, part),
            *self._close_item(index, status),
        ]

    def _close_reasoning(self, index: int, status: str) -> list[Event]:
        item = self.output[index]
        part = item["content"][0]
        part["text"] = text = self._joined(index)
        events = [
            self._done("response.reasoning_text.done", index, text=text, part=True),
            self._part_event("response.content_part.done", index, part),
        ]
        if self._reasoning_summary:
            summary = {"type": "summary_text", "text": text}
            item["summary"] = [dict(summary)]
            done = self._done("response.reasoning_summary_text.done", index, text=text)
            part_done = self._summary_event("response.reasoning_summary_part.done", index, summary)
            if status == "incomplete":
                part_done["status"] = "incomplete"
            events += [{**done, "summary_index": 0}, part_done]
        return [*events, *self._close_item(index, status)]

    def _joined(self, index: int) -> str:
        return "".join(self._pieces.pop(index))

    def _close_item(self, index: int, status: str) -> list[Event]:
        self.output[index]["status"] = status
        return [self._item_done(index)]

    def _item_done(self, index: int) -> Event:
        item = snapshot(self.output[index])
        return {"type": "response.output_item.done", "output_index": index, "item": item}

    # -- event shapes ------------------------------------------------------------------

    def _delta(self, kind: str, index: int, delta: str, part: bool = False) -> Event:
        event: Event = {
            "type": kind,
            "item_id": self.output[index]["id"],
            "output_index": index,
            "delta": delta,
        }
        if part:
            event["content_index"] = 0
        return event

    def _done(self, kind: str, index: int, part: bool = False, **fields: str) -> Event:
        event: Event = {"type": kind, "item_id": self.output[index]["id"], "output_index": index}
        if part:
            event["content_index"] = 0
        return {**event, **fields}

    def _summary_event(self, kind: str, index: int, part: Item) -> Event:
        return {
            "type": kind,
            "item_id": self.output[index]["id"],
            "output_index": index,
            "summary_index": 0,
            "part": dict(part),
        }

    def _part_event(self, kind: str, index: int, part: Item) -> Event:
        return {
            "type": kind,
            "item_id": self.output[index]["id"],
            "output_index": index,
            "content_index": 0,
            "part": dict(part),
        }
