"""Responses request -> Chat Completions request, with no I/O. What carries over between
calls is a provider's translation cache (:class:`TranslatedInputs`): a chain's next turn
translates only its own items."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...errors import UnsupportedInput
from ...reasoning_state import ReasoningState
from ...results import Item
from ...translation.additional_tools import offered_tools
from ...translation.builtin_tools import as_function_item
from ...translation.cache import KeptContexts, answer_end, joined, object_with_array
from ...translation.output_builder import ToolName
from ...translation.reasoning_context import earlier_reasoning
from ...translation.text import text_of
from ...translation.tool_errors import wire_output
from ...translation.tools import flat_name, forced_function, function_tools

_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
_ROLES = {"developer": "system"}  # most chat providers know no "developer" role


@dataclass
class ChatRequest:
    payload: dict[str, Any]
    tool_names: dict[str, ToolName] = field(default_factory=dict)
    # ``(start, count, json)``: payload["messages"][start:start + count], already encoded
    # (comma-separated, no brackets) by an earlier request with the same context.
    encoded_messages: tuple[int, int, bytes] | None = None

    def encoded(self) -> list[bytes]:
        """The payload as JSON (its messages last), reusing the messages encoded already,
        in pieces (see :func:`object_with_array`): a long context is not encoded again."""
        if self.encoded_messages is None:
            return [orjson.dumps(self.payload)]
        start, count, head = self.encoded_messages
        messages = self.payload["messages"]
        others = {key: value for key, value in self.payload.items() if key != "messages"}
        runs = [_inner(messages[:start]), head, _inner(messages[start + count :])]
        return object_with_array(others, "messages", runs)


def _inner(values: list[Any]) -> bytes:
    """``values`` as JSON, without the brackets."""
    return orjson.dumps(values)[1:-1]


def _content_parts(content: Any, index: int) -> str | list[Item]:
    """Message content -> chat content: a string when all text, else typed parts."""
    if isinstance(content, str):
        return content
    if all(isinstance(part, dict) and part.get("type") in _TEXT_PARTS for part in content):
        return "\n".join(part.get("text", "") for part in content)  # the usual case
    parts: list[Item] = []
    for position, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS:
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "refusal":
            parts.append({"type": "text", "text": part.get("refusal", "")})
        elif kind == "input_image" and part.get("image_url"):
            image: Item = {"url": part["image_url"]}
            if part.get("detail"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        else:
            raise UnsupportedInput(
                f"Content of type '{kind}' cannot be sent to a Chat Completions upstream"
                + (" (images must be given by URL)." if kind == "input_image" else "."),
                f"input[{index}].content[{position}]",
            )
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


class _Messages:
    """Accumulates chat messages, merging consecutive tool calls into one assistant turn."""

    def __init__(
        self,
        state: ReasoningState | None,
        messages: list[Item] | None = None,
        reasoning: list[str] | None = None,
    ):
        # Messages already made are never changed in place: a translated prefix shares them.
        # Only the last one may be replaced (a tool call merged into it).
        self.messages: list[Item] = messages or []
        self.pending_reasoning: list[str] = reasoning or []
        self._state = state
        # Gemini's thought signatures, by the call they go back on, from reasoning items
        self._signatures: dict[str, str] = {}
        # (count, json): the first ``count`` messages, encoded by an earlier request
        self.encoded: tuple[int, bytes] | None = None
        # Images of tool results (screenshots): a tool message holds text alone, so they
        # follow the turn's tool messages in a user message of their own.
        self._images: list[Item] = []

    def _assistant(self, message: Item) -> None:
        if self.pending_reasoning:
            message["reasoning_content"] = "\n".join(self.pending_reasoning)
            self.pending_reasoning = []
        self.messages.append(message)

    def message(self, item: Item, index: int) -> None:
        role = _ROLES.get(item["role"], item["role"])
        if role == "assistant":
            self._assistant({"role": "assistant", "content": text_of(item.get("content"))})
        else:
            content = _content_parts(item.get("content", ""), index)
            self.messages.append({"role": role, "content": content})

    def reasoning(self, item: Item) -> None:
        text = text_of(item.get("content")) or text_of(item.get("summary"))
        if text:
            self.pending_reasoning.append(text)
        state = self._state.open(item.get("encrypted_content")) if self._state else None
        if state is not None:  # this model's own: its signatures go back on their calls
            self._signatures.update(state.get("thought_signatures") or {})

    def function_call(self, item: Item) -> None:
        arguments = item.get("arguments", "")
        if item.get("type") == "custom_tool_call":
            arguments = json.dumps({"input": item.get("input", "")})
        call: Item = {
            "id": item.get("call_id"),
            "type": "function",
            "function": {
                "name": flat_name(item.get("name", ""), item.get("namespace")),
                "arguments": arguments,
            },
        }
        signature = self._signatures.get(str(item.get("call_id")))
        if signature is not None:
            call["extra_content"] = {"google": {"thought_signature": signature}}
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and not self.pending_reasoning:
            self.messages[-1] = {**last, "tool_calls": [*last.get("tool_calls", ()), call]}
            return
        self._assistant({"role": "assistant", "content": None, "tool_calls": [call]})

    def function_call_output(self, item: Item, index: int) -> None:
        output = wire_output(item)
        content = text_of(output)
        if isinstance(output, list) and any(
            isinstance(part, dict) and part.get("type") == "input_image" for part in output
        ):
            parts = _content_parts(output, index)
            images = [p for p in parts if isinstance(p, dict) and p["type"] == "image_url"]
            self._images += images
            content = content or f"The result is the image{'s' if len(images) > 1 else ''} below."
        self.messages.append(
            {"role": "tool", "tool_call_id": item.get("call_id"), "content": content}
        )

    def _flush_images(self) -> None:
        if self._images:
            self.messages.append({"role": "user", "content": self._images})
            self._images = []

    def add(self, items: list[Item], start: int) -> None:
        """Translate ``items``, the request's input from index ``start`` on."""
        for index, item in enumerate(items, start):
            item = as_function_item(item, f"input[{index}]") or item
            kind = item.get("type", "message")
            if kind not in ("function_call_output", "custom_tool_call_output"):
                self._flush_images()
            if kind == "message":
                self.message(item, index)
            elif kind in ("function_call", "custom_tool_call"):
                self.function_call(item)
            elif kind in ("function_call_output", "custom_tool_call_output"):
                self.function_call_output(item, index)
            elif kind == "reasoning":
                self.reasoning(item)
            elif kind != "additional_tools":  # its tools join the request's
                raise UnsupportedInput(
                    f"Input items of type '{kind}' cannot be sent to a Chat Completions upstream.",
                    f"input[{index}]",
                )
        self._flush_images()


@dataclass(frozen=True)
class _Translated:
    messages: list[Item]
    reasoning: list[str]
    encoded: bytes  # the messages but the last (which a later tool call may replace), as JSON

    def head(self) -> tuple[int, bytes] | None:
        return (len(self.messages) - 1, self.encoded) if self.encoded else None


class TranslatedInputs:
    """Earlier requests' context, up to the model's last answer, as chat messages and
    their JSON (see :mod:`.translation_cache`): a chain's next turn translates its own items."""

    def __init__(self, max_entries: int = 16, max_items: int = 100_000, min_items: int = 8) -> None:
        self._kept = KeptContexts[_Translated](max_entries, max_items, min_items)

    def translate(self, items: list[Item], state: ReasoningState | None = None) -> _Messages:
        """``items`` as chat messages, the reasoning state of ``state``'s model put back;
        a context translated for another model is not reused."""
        context = answer_end(items)
        if context < self._kept.min_items:
            messages = _Messages(state)
            messages.add(items, 0)
            return messages
        tag = state.origin if state else ""
        done = self._kept.longest_prefix(items, context, tag)
        if done is None:
            messages = _Messages(state)
        else:
            made = done.made
            # copies: the cached ones stay
            messages = _Messages(state, list(made.messages), list(made.reasoning))
            messages.encoded = made.head()
        start = len(done.items) if done else 0
        if start < context:
            messages.add(items[start:context], start)
            translated = _Translated(
                list(messages.messages),
                list(messages.pending_reasoning),
                _encoded_head(messages.messages, done.made if done else None),
            )
            self._kept.keep(items[:context], translated, tag)
            messages.encoded = translated.head()
        messages.add(items[context:], context)
        return messages

    def kept_items(self) -> int:
        return self._kept.kept_items()


def _encoded_head(messages: list[Item], done: _Translated | None) -> bytes:
    """``messages`` but the last as JSON, extending what ``done`` (a prefix) encoded."""
    if done is None or not done.encoded:
        return _inner(messages[:-1])
    return joined(done.encoded, _inner(messages[len(done.messages) - 1 : -1]))


def _tools(tools: list[Item]) -> tuple[list[Item], dict[str, ToolName]]:
    """Function and custom tools as chat functions (see :mod:`.tools`)."""
    offered = function_tools(tools)
    chat_tools = []
    for tool in offered:
        fields = (
            ("name", tool.name),
            ("description", tool.description),
            ("parameters", tool.parameters),
            ("strict", tool.strict),
        )
        function = {key: value for key, value in fields if value or key == "name"}
        chat_tools.append({"type": "function", "function": function})
    return chat_tools, {tool.name: tool.client for tool in offered}


def _tool_choice(choice: Any, names: dict[str, ToolName]) -> Any:
    if isinstance(choice, str):
        return choice
    name = forced_function(choice, names)
    if name is not None:
        return {"type": "function", "function": {"name": name}}
    if isinstance(choice, dict) and choice.get("mode") in ("auto", "required"):
        return choice["mode"]  # allowed_tools: the subset is not expressible, the mode is
    return "auto"


def _response_format(text: Item | None) -> Item | None:
    fmt = (text or {}).get("format") or {}
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = {
            key: fmt[key] for key in ("name", "schema", "strict", "description") if key in fmt
        }
        return {"type": "json_schema", "json_schema": schema}
    return None


# Responses parameters a Chat Completions request carries too, and their names there.
_PARAMETERS = (
    ("max_output_tokens", "max_tokens"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("presence_penalty", "presence_penalty"),
    ("frequency_penalty", "frequency_penalty"),
    ("top_logprobs", "top_logprobs"),
    ("user", "user"),
    ("safety_identifier", "safety_identifier"),
    ("service_tier", "service_tier"),
    ("prompt_cache_key", "prompt_cache_key"),
    # Chat's own, which a Chat Completions client sends and a Responses body carries as is
    ("stop", "stop"),
    ("seed", "seed"),
    ("logit_bias", "logit_bias"),
)


def _unseen(reasoning: Item) -> Item:
    """A reasoning item not replayed: no text, its sealed state kept."""
    kept = {"type": "reasoning", "summary": []}
    if reasoning.get("encrypted_content") is not None:
        kept["encrypted_content"] = reasoning["encrypted_content"]
    return kept


def to_chat_request(
    body: Item,
    *,
    model: str,
    stream: bool,
    translated: TranslatedInputs | None = None,
    state: ReasoningState | None = None,
) -> ChatRequest:
    """Translate a stateless Responses request (``input`` holds the full context).

    ``translated`` holds earlier requests' translations to start from; ``state`` opens the
    reasoning state this model gave earlier turns (Gemini's thought signatures). Raises
    :class:`UnsupportedInput` for an item or part the chat wire cannot express.
    """
    instructions = body.get("instructions")
    items = body.get("input", [])
    if earlier := earlier_reasoning(body):
        items = [_unseen(item) if i in earlier else item for i, item in enumerate(items)]
    if isinstance(instructions, list):
        items = [*instructions, *items]
    if translated is None:
        messages = _Messages(state)
        messages.add(items, 0)
    else:
        messages = translated.translate(items, state)
    chat_messages, start = messages.messages, 0
    if isinstance(instructions, str) and instructions:
        chat_messages, start = [{"role": "system", "content": instructions}, *chat_messages], 1
    head = messages.encoded
    encoded = None if head is None else (start, head[0], head[1])

    payload: Item = {"model": model, "messages": chat_messages}
    tools, names = _tools(offered_tools(body))
    if tools:
        payload["tools"] = tools
        payload["tool_choice"] = _tool_choice(body.get("tool_choice", "auto"), names)
        payload["parallel_tool_calls"] = body.get("parallel_tool_calls", True)
    response_format = _response_format(body.get("text"))
    if response_format:
        payload["response_format"] = response_format
    for source, target in _PARAMETERS:
        if body.get(source) is not None:
            payload[target] = body[source]
    if "message.output_text.logprobs" in (body.get("include") or []):
        payload["logprobs"] = True
    else:
        payload.pop("top_logprobs", None)  # Chat Completions refuses it without logprobs
    effort = (body.get("reasoning") or {}).get("effort")
    if effort:
        payload["reasoning_effort"] = effort
    if stream:
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}
    return ChatRequest(payload=payload, tool_names=names, encoded_messages=encoded)
