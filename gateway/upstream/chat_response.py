"""Chat Completions responses and stream chunks -> Responses events and a result. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .output_builder import OutputBuilder, ToolName
from .results import Event, Item, TurnResult, usage_from_chat


def _reasoning_of(message: Mapping[str, Any]) -> str:
    # DeepSeek and vLLM say reasoning_content; OpenRouter and Ollama say reasoning.
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) else ""


class ChatTranslator:
    """Created per request; feed it a whole completion or its stream chunks in order."""

    def __init__(self, tool_names: Mapping[str, ToolName] | None = None) -> None:
        self._builder = OutputBuilder(tool_names)
        self._finish_reason: str | None = None
        self._usage: Item | None = None

    def chunk(self, chunk: Mapping[str, Any]) -> list[Event]:
        """One streamed ``chat.completion.chunk`` -> the events it completes."""
        if chunk.get("usage"):
            self._usage = usage_from_chat(chunk["usage"])
        events: list[Event] = []
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            events += self._message(choice.get("delta") or {})
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
        return events

    def completion(self, completion: Mapping[str, Any]) -> list[Event]:
        """A whole non-streamed ``chat.completion`` -> its events."""
        self._usage = usage_from_chat(completion.get("usage"))
        choices = completion.get("choices") or []
        if not choices:
            return []
        self._finish_reason = choices[0].get("finish_reason")
        return self._message(choices[0].get("message") or {})

    def finish(self) -> tuple[list[Event], TurnResult]:
        return self._builder.finish(self._finish_reason, self._usage)

    def fail(self, message: str) -> tuple[list[Event], TurnResult]:
        return self._builder.fail(message)

    def _message(self, message: Mapping[str, Any]) -> list[Event]:
        builder = self._builder
        events = builder.reasoning(_reasoning_of(message))
        content = message.get("content")
        if isinstance(content, str):
            events += builder.text(content)
        for position, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            events += builder.tool_call(
                call.get("index", position),
                call.get("id"),
                function.get("name"),
                function.get("arguments") or "",
            )
        return events
