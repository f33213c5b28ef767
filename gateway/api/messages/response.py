"""A finished turn's response object -> a Messages API ``message``. Pure.

Reasoning items become thinking blocks (see :mod:`.thinking`), messages text blocks, function
calls ``tool_use`` blocks. The stop reason: ``max_tokens`` for an answer cut at its limit,
``refusal`` for one a filter stopped, ``stop_sequence`` where the gateway found one of the
request's stop sequences in the text (the text ends before it, nothing after it is kept),
``tool_use`` when the model called a tool, else ``end_turn``.
"""

from __future__ import annotations

import json
from typing import Any

from session import Item

from .request import stop_cut
from .thinking import ThinkingSeals

_INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


def message_id(response_id: str) -> str:
    """The Messages id of a turn: its response id under Anthropic's ``msg_`` prefix."""
    return "msg_" + response_id.removeprefix("resp_")


def messages_usage(usage: Item | None) -> Item:
    """Responses usage -> Messages usage: ``input_tokens`` there counts neither the cache
    reads nor the cache writes, which have fields of their own."""
    usage = usage or {}
    details = usage.get("input_tokens_details") or {}
    read = int(details.get("cached_tokens") or 0)
    written = int(details.get("cache_write_tokens") or 0)
    return {
        "input_tokens": max(int(usage.get("input_tokens") or 0) - read - written, 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
    }


def tool_input(arguments: Any) -> Item:
    """A call's JSON arguments as a ``tool_use`` input object."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def early_stop(response: Item) -> str | None:
    """``max_tokens`` or ``refusal`` for a response that ended before its end."""
    if response.get("status") != "incomplete":
        return None
    reason = (response.get("incomplete_details") or {}).get("reason")
    return _INCOMPLETE.get(str(reason), "max_tokens")


def to_message(
    response: Item, model: str, seals: ThinkingSeals, stop_sequences: list[str] | None
) -> Item:
    """The Messages answer for a finished (completed or incomplete) response object."""
    content: list[Item] = []
    matched: str | None = None
    for item in response.get("output") or []:
        kind = item.get("type")
        if kind == "reasoning":
            content += seals.blocks(item)
        elif kind == "message":
            for part in item.get("content") or []:
                text = (
                    part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                )
                if not text:
                    continue
                text, matched = stop_cut(str(text), stop_sequences)
                if text:
                    content.append({"type": "text", "text": text})
                if matched is not None:
                    break
        elif kind == "function_call":
            content.append(
                {
                    "type": "tool_use",
                    "id": item.get("call_id"),
                    "name": item.get("name"),
                    "input": tool_input(item.get("arguments")),
                }
            )
        if matched is not None:
            break
    if matched is not None:
        stop_reason = "stop_sequence"
    else:
        used_tools = any(block["type"] == "tool_use" for block in content)
        stop_reason = early_stop(response) or ("tool_use" if used_tools else "end_turn")
    return {
        "id": message_id(str(response.get("id") or "")),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": matched,
        "usage": messages_usage(response.get("usage")),
    }
