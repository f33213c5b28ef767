"""``echo``: a built-in offline model whose reply shows the context it was sent."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ...base import NONE, UpstreamStream
from ...results import Item
from ...translation.output_builder import OutputBuilder
from ...translation.text import text_of


def user_texts(items: list[Item]) -> list[str]:
    return [
        text_of(item.get("content")).strip()
        for item in items
        if item.get("type", "message") == "message" and item.get("role") == "user"
    ]


def echo_reply(request: Item) -> str:
    """A deterministic reply naming the latest user message and every earlier one."""
    said = user_texts(request.get("input") or [])
    if not said:
        return "echo: (no user message)"
    reply = f"echo: {said[-1]}"
    if len(said) > 1:
        reply += " | earlier: " + " / ".join(said[:-1])
    return reply


def _count_words(items: list[Item]) -> int:
    return sum(len(text_of(item.get("content")).split()) for item in items)


class EchoUpstream:
    capabilities = NONE

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        yield self._events(request)

    async def _events(self, request: Item) -> UpstreamStream:
        builder = OutputBuilder()
        reply = echo_reply(request)
        for word in re.findall(r"\S+\s*", reply):
            for event in builder.text(word):
                yield event
        input_tokens = _count_words(request.get("input") or [])
        output_tokens = len(reply.split())
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        closing, result = builder.finish("stop", usage)
        for event in closing:
            yield event
        yield result
