"""Compaction for models that cannot do it themselves: a summary in a sealed ``compaction`` item.

``POST /v1/responses/compact`` (and a ``compaction_trigger`` input item) asks the routed
model to summarise the conversation, and answers as OpenAI does: the user messages, then
one ``compaction`` item. Its ``encrypted_content`` is the summary sealed with AES-GCM under
the gateway's compaction key, bound to the project: it cannot be read, forged or moved to
another project. When a later request carries such an item, the model receives the summary,
framed as earlier context, in its place (and in place of what it replaced).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from session import Item, new_id

from ..errors import invalid_request, server_error
from ..sealing import COMPACTION_PREFIX, Sealer
from ..tracing import NO_TRACER, Tracer, begin, finish
from ..upstream import TurnResult, Upstream
from ..upstream.base import Replay, UpstreamStream, Wrapping
from .tokens import TokenCounter

PROMPT = """You compact the transcript of a working session between a user and an AI \
assistant (often a coding agent with tools) so that the work can go on in a fresh context \
that holds only your summary and the user's messages. Write what a successor needs to \
continue without asking again:

- Goals: what the user wants, their constraints and preferences.
- Decisions: what was decided or ruled out, and why.
- Files and commands: paths, functions, identifiers, commands, URLs and versions that \
matter, written exactly.
- Tool results: outputs that still matter (errors, test results, values found), briefly.
- State: what is done, what was being done at the end.
- Next steps: the open tasks, in order.

Be terse: short bullet lists under those headings, no pleasantries, nothing superseded."""

SUMMARY_FRAME = "Summary of the earlier part of this conversation (compacted):\n\n"


def is_ours(item: Item) -> bool:
    content = item.get("encrypted_content")
    return (
        item.get("type") == "compaction"
        and isinstance(content, str)
        and (content.startswith(COMPACTION_PREFIX))
    )


_COMPACTION_TYPES = frozenset({"compaction", "compaction_trigger"})


def check_sealed(sealer: Sealer, project: str, items: list[Item], param: str) -> None:
    """A 400 for a ``compaction`` item of ``items`` that was not sealed here for ``project``.

    A conversation keeps only compaction items that every turn on it can open: a foreign
    one (another provider's, or another project's) would fail each later turn instead.
    """
    for index, item in enumerate(items):
        if item.get("type") != "compaction":
            continue
        content = item.get("encrypted_content")
        if not is_ours(item) or sealer.open(project, str(content)) is None:
            raise invalid_request(
                f"The compaction item at '{param}[{index}]' was not made by this gateway for "
                "this project, or was altered.",
                param=f"{param}[{index}].encrypted_content",
                code="invalid_encrypted_content",
            )


def expand(
    sealer: Sealer,
    project: str,
    history: list[Item],
    own: list[Item],
    history_types: frozenset[str | None] | None = None,
) -> list[Item]:
    """The history then the request's ``own`` items, this gateway's compaction items
    opened into their summaries.

    The summary takes the item's place; what came before it, but the user's own messages,
    is what it summarised and is dropped. Earlier turns' ``compaction_trigger`` items go
    too. ``history_types``, the item types the history holds when known, spares a scan of
    a long history.
    """
    items = [*history, *own]
    known_clean = history_types is not None and history_types.isdisjoint(_COMPACTION_TYPES)
    scanned = own if known_clean else items
    if not any(item.get("type") in _COMPACTION_TYPES for item in scanned):
        return items  # the usual case, on every turn: nothing to open or drop
    first_input = len(history)
    expanded: list[Item] = []
    last = len(items) - 1
    for index, item in enumerate(items):
        if item.get("type") == "compaction_trigger" and index != last:
            continue  # an earlier turn's request to compact: done, its result follows
        if not is_ours(item):
            expanded.append(item)
            continue
        summary = sealer.open(project, item["encrypted_content"])
        if summary is None:
            where = f"input[{index - first_input}]" if index >= first_input else "input"
            raise invalid_request(
                f"The compaction item at '{where}' was not made by this gateway for this "
                "project, or was altered.",
                param=where,
                code="invalid_encrypted_content",
            )
        expanded = [i for i in expanded if _survives_compaction(i)]
        expanded.append({"type": "message", "role": "user", "content": SUMMARY_FRAME + summary})
    return expanded


def _survives_compaction(item: Item) -> bool:
    """What a compaction leaves in place: the user's (and system) messages."""
    return item.get("type", "message") == "message" and item.get("role") in (
        "user",
        "system",
        "developer",
    )


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(part) for part in value)
    if isinstance(value, dict):
        for key in ("text", "output", "arguments", "input"):
            if isinstance(value.get(key), str | list):
                return _text(value[key])
    return ""


def transcript(items: list[Item]) -> str:
    """The conversation as plain text, one entry per item, for the summarising model."""
    lines = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            lines.append(f"[{item.get('role', 'user')}] {_text(item.get('content'))}")
        elif kind.endswith("_call"):
            name = item.get("name") or kind
            lines.append(f"[tool call {name}] {_text(item)}")
        elif kind.endswith("_call_output"):
            lines.append(f"[tool result] {_text(item)}")
        elif kind == "reasoning":
            lines.append(
                f"[assistant reasoning] {_text(item.get('summary') or item.get('content'))}"
            )
    return "\n\n".join(lines)


def summary_request(model: str, items: list[Item]) -> Item:
    """The stateless request that asks ``model`` for the summary."""
    return {
        "model": model,
        "instructions": PROMPT,
        "input": [{"type": "message", "role": "user", "content": transcript(items)}],
    }


def compacted_output(sealer: Sealer, project: str, items: list[Item], summary: str) -> list[Item]:
    """OpenAI's shape: every user message of ``items``, then one compaction item."""
    users = [
        {
            "id": item.get("id") or new_id("msg"),
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": item.get("content"),
        }
        for item in items
        if item.get("type", "message") == "message" and item.get("role") == "user"
    ]
    sealed = {
        "id": new_id("cmp"),
        "type": "compaction",
        "encrypted_content": sealer.seal(project, summary),
    }
    return [*users, sealed]


def compaction_object(output: list[Item], usage: Item | None) -> dict[str, Any]:
    return {
        "id": new_id("resp"),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": output,
        "usage": usage,
    }


class CompactingUpstream(Wrapping):
    """An upstream whose answer is a compaction: for a ``compaction_trigger`` request to a
    model that cannot compact itself. It asks ``inner`` for the summary; its one output
    item is the sealed ``compaction`` item."""

    def __init__(
        self, inner: Upstream, sealer: Sealer, project: str, tracer: Tracer = NO_TRACER
    ) -> None:
        super().__init__(inner)
        self._tracer = tracer
        self._sealer = sealer
        self._project = project

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        items = [i for i in request["input"] if i.get("type") != "compaction_trigger"]
        step = begin("compaction", "summary", items=len(items))
        with self._tracer.span("compaction", attributes={"gateway.compaction.items": len(items)}):
            summary, usage = await summarise(self._inner, request["model"], items)
        finish(step)
        item = compacted_output(self._sealer, self._project, [], summary)[-1]
        events = [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
        yield Replay(events, TurnResult(status="completed", output=[item], usage=usage))


async def summarise(upstream: Upstream, model: str, items: list[Item]) -> tuple[str, Item | None]:
    """The summary ``upstream`` writes of ``items``, and what it cost."""
    result: TurnResult | None = None
    async with upstream.open(summary_request(model, items), stream=False) as events:
        async for event in events:
            if isinstance(event, TurnResult):
                result = event
    if result is None or result.status == "failed" or not result.output_text:
        reason = (result.error or {}).get("message") if result else None
        raise server_error(
            502, f"The model could not summarise the conversation: {reason}.", "upstream_error"
        )
    return result.output_text, result.usage


def compact_threshold(context_management: Any) -> int | None:
    """The ``compact_threshold`` of a ``context_management`` compaction entry, if any."""
    if not isinstance(context_management, list):
        return None
    for entry in context_management:
        if isinstance(entry, dict) and entry.get("type") == "compaction":
            threshold = entry.get("compact_threshold")
            if isinstance(threshold, int) and not isinstance(threshold, bool) and threshold > 0:
                return threshold
    return None


class AutoCompacting(Wrapping):
    """An upstream that first compacts a request's history (``context_management``): the
    model gets the user's messages and a summary in place of the rest, and the response
    starts with the sealed ``compaction`` item so a client can carry it on."""

    def __init__(
        self,
        inner: Upstream,
        sealer: Sealer,
        project: str,
        history_count: int,
        record_usage: Callable[[Item | None], Awaitable[None]],
        tracer: Tracer = NO_TRACER,
    ) -> None:
        super().__init__(inner)
        self._tracer = tracer
        self._sealer = sealer
        self._project = project
        self._history_count = history_count
        self._record_usage = record_usage  # the summary's tokens: the response's are its own

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        past, current = (
            request["input"][: self._history_count],
            request["input"][self._history_count :],
        )
        step = begin("compaction", "summary", items=len(past))
        with self._tracer.span("compaction", attributes={"gateway.compaction.items": len(past)}):
            summary, usage = await summarise(self._inner, request["model"], past)
        finish(step)
        await self._record_usage(usage)
        item = compacted_output(self._sealer, self._project, [], summary)[-1]
        survivors = [entry for entry in past if _survives_compaction(entry)]
        summary_message = {"type": "message", "role": "user", "content": SUMMARY_FRAME + summary}
        compacted = {**request, "input": [*survivors, summary_message, *current]}
        async with self._inner.open(compacted, stream=stream) as events:
            yield _after(item, events)


async def _after(item: Item, events: UpstreamStream) -> UpstreamStream:
    """``events`` with ``item`` as output item 0 before them, their own indexes shifted."""
    yield {"type": "response.output_item.added", "output_index": 0, "item": item}
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    async for event in events:
        if isinstance(event, TurnResult):
            event.output = [item, *event.output]
        elif isinstance(event.get("output_index"), int):
            event = {**event, "output_index": event["output_index"] + 1}
        yield event


async def compacting(
    upstream: Upstream,
    request: Item,
    history_count: int,
    context_management: Any,
    counter: TokenCounter,
    sealer: Sealer,
    project: str,
    record_usage: Callable[[Item | None], Awaitable[None]],
    tracer: Tracer = NO_TRACER,
) -> Upstream:
    """``upstream``, compacting first when the request asks for it: a ``compaction_trigger``
    as its last input item (the answer is the compaction), or a chain's input past
    ``context_management``'s ``compact_threshold`` (the history is compacted, then
    answered). ``record_usage`` keeps the summary's tokens."""
    items = request["input"]
    if items and items[-1].get("type") == "compaction_trigger":
        return CompactingUpstream(upstream, sealer, project, tracer)
    threshold = compact_threshold(context_management)
    if threshold is not None and history_count and await counter.count(request) > threshold:
        return AutoCompacting(upstream, sealer, project, history_count, record_usage, tracer)
    return upstream
