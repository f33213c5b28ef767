"""One model call of a turn with tools the gateway runs: its events relayed, its calls of
the kinds' functions run.

A function call to one of a kind's functions becomes that kind's item, in the place the
call had; every other item and event passes through, its ``output_index`` shifted past
the items earlier calls of the turn produced. A call past ``max_tool_calls`` (or once the
functions are no longer offered) is ignored, as OpenAI has it: not run, not in the output,
not read back to the model. The answer's text gets the annotations the kinds find in it
(citations), announced before its part is done.
"""

from __future__ import annotations

from typing import Protocol

from ...tracing import Tracer
from ..results import Event, Item, TurnResult
from ..translation.builtin_tools import CALL_TYPES
from .events import added
from .kind import Call, Kind
from .tool_spans import traced_call

_CLIENT_CALLS = frozenset({"function_call", "custom_tool_call", *CALL_TYPES})


class Run(Protocol):
    """What a step reads and changes of its turn (:class:`gateway.upstream.hosted.run.Run`)."""

    kinds: list[Kind]
    stream: bool
    output: list[Item]
    model_input: list[Item]
    planned: int
    tracer: Tracer

    def emit(self, *events: Event) -> None: ...

    def may_call(self) -> bool: ...

    def remaining(self) -> float: ...


def call_pair(call_id: str, name: str, arguments: str, output: str) -> list[Item]:
    """A function call and its output, as the model is told of a call the gateway ran."""
    return [
        {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments},
        {"type": "function_call_output", "call_id": call_id, "output": output},
    ]


class Step:
    """The state of one model call: which of its items are the kinds' calls."""

    def __init__(self, run: Run, offered: bool) -> None:
        self._run = run
        self._offset = len(run.output)
        self._offered = offered
        self._calls: dict[int, tuple[Kind, Call | None]] = {}  # index: kind, call (None: ignored)
        self._cited: dict[tuple[int, int], list[Item]] = {}
        self._announced: set[int] = set()

    def _kind(self, name: str) -> Kind | None:
        return next((kind for kind in self._run.kinds if kind.owns(name)), None)

    def _decide(self, index: int, inner: Item) -> tuple[Kind, Call | None] | None:
        if index in self._calls:
            return self._calls[index]
        if inner.get("type") != "function_call":
            return None
        name = str(inner.get("name") or "")
        kind = self._kind(name)
        if kind is None:
            return None
        call = None
        if self._offered and self._run.may_call():
            call = kind.start(name)
            self._run.planned += call.counted
        self._calls[index] = (kind, call)
        return self._calls[index]

    def _at(self, index: int) -> int:
        """Where the item ``index`` of the model's output is in the turn's: items come in
        order, so those ignored before it are known, and left out."""
        ignored = sum(1 for j, (_, call) in self._calls.items() if j < index and call is None)
        return self._offset + index - ignored

    def annotate(self, text: str) -> list[Item]:
        return [found for kind in self._run.kinds for found in kind.annotations(text)]

    # -- streamed events ------------------------------------------------------------------

    def relay(self, event: Event) -> list[Event]:
        """The events to send for one of the inner stream's."""
        index = event.get("output_index")
        if not isinstance(index, int):
            return [event]
        kind = event.get("type")
        if kind == "response.output_item.added":
            self._decide(index, event.get("item") or {})
        at = self._at(index)
        if index in self._calls:
            owner, call = self._calls[index]
            if call is None:
                return []
            if kind == "response.output_item.added":
                self._announced.add(index)
                return [added(at, call.item), *owner.started(at, call.item)]
            return owner.relay(at, call.item, event)
        if kind == "response.output_text.done":
            return [*self._annotation_events(at, index, event), {**event, "output_index": at}]
        if kind == "response.content_part.done":
            part = self._with_annotations(index, event.get("content_index"), event.get("part"))
            return [{**event, "output_index": at, "part": part}]
        if kind == "response.output_item.done":
            return [{**event, "output_index": at, "item": self._annotated(index, event["item"])}]
        return [{**event, "output_index": at}]

    def _annotation_events(self, at: int, index: int, event: Event) -> list[Event]:
        content = event.get("content_index", 0)
        found = self.annotate(str(event.get("text") or ""))
        self._cited[(index, content)] = found
        return [
            {
                "type": "response.output_text.annotation.added",
                "item_id": event.get("item_id"),
                "output_index": at,
                "content_index": content,
                "annotation_index": number,
                "annotation": annotation,
            }
            for number, annotation in enumerate(found)
        ]

    def _with_annotations(self, index: int, content: object, part: object) -> object:
        found = self._cited.get((index, content if isinstance(content, int) else 0))
        if not found or not isinstance(part, dict) or part.get("type") != "output_text":
            return part
        return {**part, "annotations": [*(part.get("annotations") or []), *found]}

    def _annotated(self, index: int, item: Item) -> Item:
        if item.get("type") != "message" or not isinstance(item.get("content"), list):
            return item
        parts = [
            self._with_annotations(index, number, part)
            for number, part in enumerate(item["content"])
        ]
        return {**item, "content": parts}

    # -- the end of the model call --------------------------------------------------------

    def _final(self, index: int, inner: Item) -> Item:
        """A message of the answer with its annotations (as streamed, or found now)."""
        if inner.get("type") != "message" or not isinstance(inner.get("content"), list):
            return inner
        for number, part in enumerate(inner["content"]):
            if isinstance(part, dict) and part.get("type") == "output_text":
                key = (index, number)
                if key not in self._cited:
                    self._cited[key] = self.annotate(str(part.get("text") or ""))
        return self._annotated(index, inner)

    def abandon(self, result: TurnResult) -> None:
        """Add a failed call's items to the turn, the kinds' calls unrun (``incomplete``)."""
        for index, inner in enumerate(result.output):
            decision = self._calls.get(index)
            if decision is None:
                self._run.output.append(self._final(index, inner))
                continue
            kind, call = decision
            if call is None:
                continue
            kind.settled(len(self._run.output), call.item, str(inner.get("arguments") or ""))
            if not call.waits:
                call.item["status"] = "incomplete"
            self._run.output.append(call.item)

    async def finish(self, result: TurnResult) -> bool:
        """Add the call's items to the turn, run the kinds' calls; whether to call the model
        again (calls ran, none waits for the client, no client call waits for its output)."""
        run = self._run
        again = client_calls = waiting = False
        for index, inner in enumerate(result.output):
            decision = self._decide(index, inner)
            if decision is None:
                final = self._final(index, inner)
                run.output.append(final)
                run.model_input.append(final)
                client_calls = client_calls or inner.get("type") in _CLIENT_CALLS
                continue
            kind, call = decision
            if call is None:
                continue
            item, at = call.item, len(run.output)
            run.output.append(item)
            arguments = str(inner.get("arguments") or "")
            events = kind.settled(at, item, arguments)
            if run.stream and index not in self._announced:
                run.emit(added(at, item), *kind.started(at, item), *events)
            if call.waits:
                waiting = True
                continue
            output = await traced_call(
                run.tracer,
                kind,
                item,
                arguments,
                kind.run(at, item, arguments, run.remaining(), run.emit),
            )
            again = True
            call_id = str(inner.get("call_id") or item["id"])
            run.model_input += call_pair(call_id, str(inner.get("name")), arguments, output)
        return again and not waiting and not client_calls and result.status == "completed"
