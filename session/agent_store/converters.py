"""Stored messages -> model inputs: Chat Completions messages, or Anthropic Messages.

A message's ``payload`` is a string, a list of content parts, or an object: a chat message
(``content``, ``tool_calls``), a Responses item (``function_call``,
``function_call_output``), or anything else, which is sent as its JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from ..models import Item
from .models import Message

_TEXT_PARTS = ("text", "input_text", "output_text")


def _parts(content: list[Any]) -> list[Item]:
    parts: list[Item] = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": "text", "text": part})
        elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
            parts.append({"type": "text", "text": part.get("text", "")})
        elif isinstance(part, dict) and part.get("type") in ("image_url", "input_image"):
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in _parts(content) if p["type"] == "text")
    return json.dumps(content, ensure_ascii=False)


def _openai(message: Message) -> Item:
    payload, role = message.payload, message.role
    if isinstance(payload, str):
        return {"role": role or "user", "content": payload}
    if isinstance(payload, list):
        return {"role": role or "user", "content": _parts(payload)}
    if isinstance(payload, dict):
        kind = payload.get("type") or message.type
        if kind == "function_call":
            call = {"name": payload.get("name"), "arguments": payload.get("arguments", "{}")}
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": payload.get("call_id"), "type": "function", "function": call}
                ],
            }
        if kind == "function_call_output":
            return {
                "role": "tool",
                "tool_call_id": payload.get("call_id"),
                "content": _text(payload.get("output", "")),
            }
        if "content" in payload or "tool_calls" in payload:
            chat = {key: value for key, value in payload.items() if key != "type"}
            chat["role"] = payload.get("role") or role or "user"
            if isinstance(chat.get("content"), list):
                chat["content"] = _parts(chat["content"])
            return chat
    return {"role": role or "user", "content": json.dumps(payload, ensure_ascii=False)}


def to_openai_input(messages: list[Message]) -> list[Item]:
    """Chat Completions ``messages``, in order."""
    return [_openai(message) for message in messages]


def to_anthropic_messages(messages: list[Message]) -> dict[str, Any]:
    """``{"system": ..., "messages": [...]}`` for Anthropic's Messages API: system messages
    lifted out, tool calls and results mapped, consecutive turns of one role merged."""
    system: list[str] = []
    turns: list[Item] = []
    for chat in to_openai_input(messages):
        role = chat["role"]
        if role in ("system", "developer"):
            system.append(_text(chat.get("content")))
            continue
        blocks: list[Item] = []
        if role == "tool":
            role = "user"
            blocks.append(
                {"type": "tool_result", "tool_use_id": chat.get("tool_call_id"),
                 "content": _text(chat.get("content"))}
            )  # fmt: skip
        else:
            text = _text(chat.get("content")) if chat.get("content") is not None else ""
            if text:
                blocks.append({"type": "text", "text": text})
            for call in chat.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = {"input": function.get("arguments")}
                blocks.append(
                    {"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                     "input": arguments}
                )  # fmt: skip
        role = "assistant" if role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        elif blocks:
            turns.append({"role": role, "content": blocks})
    return {"system": "\n\n".join(system) or None, "messages": turns}
