"""Which earlier reasoning items a chain replays to a translated model: ``reasoning.context``.

``all_turns`` replays every reasoning item of the context; ``current_turn`` only those after
the latest user message (the turn in progress, with its tool calls); ``auto``, or nothing,
is ``all_turns`` on the Chat Completions and Anthropic wires, which is what those models were
given before the field existed. A Responses upstream receives the field and applies it
itself. On the Chat Completions wire an item not replayed loses its text but keeps its
sealed state (Gemini's thought signatures go back on their calls); on the Anthropic wire its
thinking blocks are left out, as the Messages API allows for every turn before the current.
"""

from __future__ import annotations

from typing import Any

from ..results import Item


def earlier_reasoning(body: Item) -> frozenset[int]:
    """The indices in ``body["input"]`` of the reasoning items not to replay."""
    context = (body.get("reasoning") or {}).get("context")
    items: Any = body.get("input")
    if context != "current_turn" or not isinstance(items, list):
        return frozenset()
    turn = 0
    for index, item in enumerate(items):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            turn = index
    return frozenset(
        index for index, item in enumerate(items[:turn]) if item.get("type") == "reasoning"
    )
