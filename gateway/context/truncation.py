"""``truncation: "auto"``: drop the oldest turns of the history until the request fits.

A history is cut only before a user message, and never so that a tool call's output
stays without its call: whole turns go, the instructions and the new input stay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from session import Item

from ..upstream.errors import (
    UpstreamError,
)
from .tokens import TokenCounter

# "maximum context length is 8192" (OpenAI, vLLM), "prompt is too long: 210000 tokens >
# 200000 maximum" (Anthropic)
_LIMIT = re.compile(r"maximum context length is (\d+)|> (\d+) maximum", re.IGNORECASE)


def stated_limit(error: UpstreamError) -> int | None:
    """The context window an upstream's error message names (vLLM, OpenAI, DeepSeek,
    Anthropic do)."""
    found = _LIMIT.search(error.message)
    return int(found.group(1) or found.group(2)) if found else None


def cut_points(history: Sequence[Item]) -> list[int]:
    """Where ``history`` may start instead: before a user message, with no orphaned output."""
    points = []
    for index, item in enumerate(history):
        if index == 0 or item.get("type", "message") != "message" or item.get("role") != "user":
            continue
        calls = {i.get("call_id") for i in history[index:] if i.get("type", "").endswith("_call")}
        outputs = {
            i.get("call_id") for i in history[index:] if i.get("type", "").endswith("_call_output")
        }
        if outputs <= calls:
            points.append(index)
    return points


def fit(history: Sequence[Item], sizes: Sequence[int], budget: int) -> list[Item]:
    """The longest tail of ``history`` (cut at a cut point) whose items fit in ``budget``."""
    for start in [0, *cut_points(history)]:
        if sum(sizes[start:]) <= budget:
            return list(history[start:])
    return []


async def truncated(
    request: Item, history_count: int, counter: TokenCounter, window: int
) -> tuple[Item, int] | None:
    """``request`` with the oldest turns of its first ``history_count`` input items dropped so
    that it fits ``window`` tokens (its ``max_output_tokens`` left free), and how many
    history items are left; ``None`` if nothing could be dropped."""
    items: list[Item] = request["input"]
    past, current = items[:history_count], items[history_count:]
    sizes = await counter.item_sizes(past)
    fixed = await counter.count({**request, "input": current})
    fitting = fit(past, sizes, window - fixed - (request.get("max_output_tokens") or 0))
    if len(fitting) == len(past):
        return None
    return {**request, "input": [*fitting, *current]}, len(fitting)
