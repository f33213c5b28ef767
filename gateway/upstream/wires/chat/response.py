"""Chat Completions responses and stream chunks -> Responses events and a result. Pure.

Every value read from the provider is checked for its type first: a malformed answer
raises :class:`MalformedAnswer` instead of turning into an empty or wrong turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MalformedAnswer
from ...reasoning_state import ReasoningState
from ...results import Event, Item, TurnResult, usage_from_chat
from ...translation.output_builder import OutputBuilder, ToolName


def _field(mapping: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = mapping.get(key)
    if value is not None and not isinstance(value, kind):
        raise MalformedAnswer(f"'{where}.{key}' has the wrong type ({type(value).__name__})")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAnswer(f"'{where}' is not an object")
    return value


def _reasoning_of(message: Mapping[str, Any]) -> str:
    # DeepSeek and vLLM say reasoning_content; OpenRouter and Ollama say reasoning.
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _logprob(entry: Any, where: str) -> Item:
    entry = _object(entry, where)
    token = _field(entry, "token", str, where) or ""
    logprob = _field(entry, "logprob", (int, float), where) or 0.0
    raw_bytes = _field(entry, "bytes", list, where)
    return {"token": token, "logprob": float(logprob), "bytes": raw_bytes or list(token.encode())}


def _logprobs(choice: Mapping[str, Any], where: str) -> list[Item] | None:
    """A choice's token log probabilities, in Responses' shape (``top_logprobs`` inside)."""
    logprobs = _field(choice, "logprobs", dict, where)
    content = _field(logprobs or {}, "content", list, f"{where}.logprobs")
    if not content:
        return None
    converted = []
    for n, entry in enumerate(content):
        at = f"{where}.logprobs.content[{n}]"
        top = _field(_object(entry, at), "top_logprobs", list, at) or []
        converted.append(
            {
                **_logprob(entry, at),
                "top_logprobs": [_logprob(t, f"{at}.top_logprobs[{m}]") for m, t in enumerate(top)],
            }
        )
    return converted


class ChatTranslator:
    """Created per request; feed it a whole completion or its stream chunks in order."""

    def __init__(
        self,
        tool_names: Mapping[str, ToolName] | None = None,
        reasoning_summary: bool = False,
        state: ReasoningState | None = None,
    ) -> None:
        """``reasoning_summary``: the client asked for one (the provider's reasoning is it);
        ``state`` seals what the provider needs back (Gemini's thought signatures)."""
        self._builder = OutputBuilder(tool_names, reasoning_summary)
        self._state = state
        self._finish_reason: str | None = None
        self._usage: Item | None = None
        self._service_tier: str | None = None

    @property
    def finished(self) -> bool:
        """Whether the provider said why the answer ended (a cut stream never does)."""
        return self._finish_reason is not None

    def chunk(self, chunk: Any) -> list[Event]:
        """One streamed ``chat.completion.chunk`` -> the events it completes."""
        chunk = _object(chunk, "chunk")
        self._service_tier = _field(chunk, "service_tier", str, "chunk") or self._service_tier
        usage = _field(chunk, "usage", dict, "chunk")
        if usage:
            self._usage = usage_from_chat(usage)
        events: list[Event] = []
        for position, choice in enumerate(_field(chunk, "choices", list, "chunk") or []):
            where = f"chunk.choices[{position}]"
            choice = _object(choice, where)
            if _field(choice, "index", int, where) not in (0, None):
                continue
            delta = _object(choice.get("delta") or {}, f"{where}.delta")
            events += self._message(delta, where, _logprobs(choice, where))
            reason = _field(choice, "finish_reason", str, where)
            if reason:
                self._finish_reason = reason
        return events

    def completion(self, completion: Any) -> list[Event]:
        """A whole non-streamed ``chat.completion`` -> its events."""
        completion = _object(completion, "completion")
        if "error" in completion:
            raise MalformedAnswer("the answer is an error object, not a completion")
        self._usage = usage_from_chat(_field(completion, "usage", dict, "completion"))
        self._service_tier = _field(completion, "service_tier", str, "completion")
        choices = _field(completion, "choices", list, "completion")
        if not choices:
            raise MalformedAnswer("the completion has no choices")
        choice = _object(choices[0], "choices[0]")
        self._finish_reason = _field(choice, "finish_reason", str, "choices[0]") or "stop"
        message = _object(choice.get("message"), "choices[0].message")
        return self._message(message, "choices[0].message", _logprobs(choice, "choices[0]"))

    def finish(self) -> tuple[list[Event], TurnResult]:
        events, result = self._builder.finish(self._finish_reason, self._usage)
        result.service_tier = self._service_tier
        return events, result

    def fail(self, message: str) -> tuple[list[Event], TurnResult]:
        return self._builder.fail(message)

    def _message(
        self, message: Mapping[str, Any], where: str, logprobs: list[Item] | None = None
    ) -> list[Event]:
        builder = self._builder
        events = builder.reasoning(_reasoning_of(message))
        content = _field(message, "content", str, where)
        if content:
            events += builder.text(content, logprobs)
        for position, call in enumerate(_field(message, "tool_calls", list, where) or []):
            call_where = f"{where}.tool_calls[{position}]"
            call = _object(call, call_where)
            function = _object(call.get("function") or {}, f"{call_where}.function")
            index = _field(call, "index", int, call_where)
            call_id = _field(call, "id", str, call_where)
            events += self._thought_signature(call, call_id, call_where)
            events += builder.tool_call(
                position if index is None else index,
                call_id,
                _field(function, "name", str, f"{call_where}.function"),
                _field(function, "arguments", str, f"{call_where}.function") or "",
            )
        return events

    def _thought_signature(
        self, call: Mapping[str, Any], call_id: str | None, where: str
    ) -> list[Event]:
        """A reasoning item sealing the signature Gemini put on ``call``, which it must get
        back on that call next turn (``extra_content.google.thought_signature``)."""
        extra = _object(call.get("extra_content") or {}, f"{where}.extra_content")
        google = _object(extra.get("google") or {}, f"{where}.extra_content.google")
        signature = _field(google, "thought_signature", str, f"{where}.extra_content.google")
        if not signature or call_id is None or self._state is None:
            return []
        sealed = self._state.seal({"thought_signatures": {call_id: signature}})
        return self._builder.reasoning_end(sealed)
