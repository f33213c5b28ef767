"""Responses request -> Messages API request, with no I/O.

The resolved context becomes ``system`` and alternating ``user``/``assistant`` messages:
instructions, system and developer items go to ``system``; tool calls become ``tool_use``
blocks and their outputs ``tool_result`` blocks, first in the next user message; the
thinking blocks an earlier turn of this model returned (sealed in its reasoning items, see
:mod:`gateway.upstream.reasoning_state`) go back unchanged, first in their assistant turn.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ....config import Route
from ...errors import UnsupportedInput
from ...reasoning_state import ReasoningState
from ...results import Item
from ...translation.additional_tools import offered_tools
from ...translation.builtin_tools import as_function_item
from ...translation.output_builder import ToolName
from ...translation.reasoning_context import earlier_reasoning
from ...translation.text import text_of
from ...translation.tool_errors import is_failed_output
from ...translation.tools import flat_name, forced_function
from .content import cache_control, content_blocks
from .rules import Origins, check_tool_pairs, messages_tools, opened_by_user, sampling

_TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_TOOL_CALLS = frozenset({"function_call", "custom_tool_call"})
_THINKING = frozenset({"thinking", "redacted_thinking"})
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_CACHE_BREAKPOINTS = 4
# Adaptive thinking's efforts, from Responses' reasoning efforts.
_ADAPTIVE_EFFORTS = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}
MIN_THINKING_BUDGET = 1024


@dataclass
class MessagesRequest:
    payload: dict[str, Any]
    tool_names: dict[str, ToolName] = field(default_factory=dict)

    def count_tokens_payload(self) -> dict[str, Any]:
        """What ``/v1/messages/count_tokens`` takes of this request."""
        keys = ("model", "messages", "system", "tools", "tool_choice", "thinking", "output_config")
        return {key: self.payload[key] for key in keys if key in self.payload}


def tool_id(call_id: Any) -> str:
    """``call_id`` as a valid Anthropic tool id, the same for the same id on every turn."""
    text = str(call_id or "")
    if _TOOL_ID.match(text):
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{re.sub(r'[^a-zA-Z0-9_-]', '_', text)[:40]}_{digest}"


class _Conversation:
    """Builds ``system`` and the alternating messages, item by item."""

    def __init__(self, state: ReasoningState) -> None:
        self.system: list[Item] = []
        self.messages: list[Item] = []
        self.origins: Origins = {}  # where each tool call and output is in the input
        self._state = state

    def _append(self, role: str, blocks: list[Item]) -> None:
        if not blocks:
            return
        last = self.messages[-1] if self.messages else None
        if last is None or last["role"] != role:
            self.messages.append({"role": role, "content": list(blocks)})
            return
        if role == "user":  # a turn's tool results come first, before any text
            merged = [*last["content"], *blocks]
            results = [b for b in merged if b["type"] == "tool_result"]
            last["content"] = [*results, *(b for b in merged if b["type"] != "tool_result")]
        else:
            last["content"].extend(blocks)

    def add(self, item: Item, index: int) -> None:
        where = f"input[{index}]"
        item = as_function_item(item, where) or item  # a built-in tool's call or output
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                self.system += content_blocks(item.get("content"), f"{where}.content", str(role))
            elif role == "assistant":
                blocks = content_blocks(item.get("content"), f"{where}.content", "assistant")
                self._append("assistant", blocks)
            else:
                self._append("user", content_blocks(item.get("content"), f"{where}.content"))
        elif kind == "reasoning":
            state = self._state.open(item.get("encrypted_content"))
            if state is not None:  # else another model's: only its visible turns go
                self._append("assistant", list(state.get("blocks", [])))
        elif kind in _TOOL_CALLS:
            use = self._tool_use(item)
            self.origins.setdefault(("call", use["id"]), index)
            self._append("assistant", [use])
        elif kind in _TOOL_OUTPUTS:
            result = self._tool_result(item, where)
            self.origins[("result", result["tool_use_id"])] = index
            self._append("user", [result])
        elif kind != "additional_tools":  # its tools join the request's
            raise UnsupportedInput(
                f"Input items of type '{kind}' cannot be sent to an Anthropic upstream.", where
            )

    @staticmethod
    def _tool_use(item: Item) -> Item:
        name = flat_name(item.get("name", ""), item.get("namespace"))
        if item.get("type") == "custom_tool_call":
            arguments: Any = {"input": item.get("input", "")}
        else:
            try:
                arguments = json.loads(item.get("arguments") or "{}")
            except ValueError:
                arguments = {"arguments": item.get("arguments")}
            if not isinstance(arguments, dict):
                arguments = {"value": arguments}
        return {
            "type": "tool_use",
            "id": tool_id(item.get("call_id")),
            "name": name,
            "input": arguments,
        }

    @staticmethod
    def _tool_result(item: Item, where: str) -> Item:
        output = item.get("output")
        content: Any = (
            output if isinstance(output, str) else content_blocks(output, f"{where}.output")
        )
        if isinstance(output, list) and not content:
            content = text_of(output)
        result: Item = {
            "type": "tool_result",
            "tool_use_id": tool_id(item.get("call_id")),
            "content": content,
        }
        if is_failed_output(item):
            result["is_error"] = True
        return result


def _tool_choice(choice: Any, names: dict[str, ToolName]) -> Item:
    name = forced_function(choice, names)
    if name is not None:
        return {"type": "tool", "name": name}
    mode = choice.get("mode") if isinstance(choice, dict) else choice
    return {"type": {"required": "any", "none": "none"}.get(str(mode), "auto")}


def _thinking(body: Item, route: Route, max_tokens: int) -> tuple[Item | None, Item | None]:
    """The ``thinking`` and ``output_config`` a request's ``reasoning.effort`` asks for."""
    effort = (body.get("reasoning") or {}).get("effort")
    settings = route.thinking
    if not effort or effort == "none" or settings.mode == "off":
        return None, None
    if settings.mode == "adaptive":
        return {"type": "adaptive"}, {"effort": _ADAPTIVE_EFFORTS.get(effort, "medium")}
    budget = min(settings.budgets.get(effort, MIN_THINKING_BUDGET), max_tokens - 1)
    if budget < MIN_THINKING_BUDGET:
        return None, None  # no room to think within max_output_tokens
    return {"type": "enabled", "budget_tokens": budget}, None


def _continues_without_thinking(messages: list[Item]) -> bool:
    """Whether the last assistant turn used tools without a thinking block first, which the
    API refuses while thinking is on (another model's turn, or one that did not think)."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            blocks = message["content"]
            used_tools = any(block["type"] == "tool_use" for block in blocks)
            return used_tools and blocks[0]["type"] not in _THINKING
    return False


def _automatic_breakpoints(payload: Item) -> list[Item]:
    """The gateway's own breakpoints: the tools, the system prompt, the end of the previous
    request's context (the user turn before the last answer) and the end of this one, so
    that a chain's next turn reads everything up to its own input from the cache."""
    marked: list[Item] = []
    if payload.get("tools"):
        marked.append(payload["tools"][-1])
    if payload.get("system"):
        marked.append(payload["system"][-1])
    messages = payload["messages"]
    last_answer = max((n for n, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    for position in (last_answer - 1, len(messages) - 1):
        if position >= 0:
            cacheable = [b for b in messages[position]["content"] if b["type"] not in _THINKING]
            if cacheable and all(cacheable[-1] is not m for m in marked):
                marked.append(cacheable[-1])
    return marked


def _in_order(payload: Item) -> list[Item]:
    """Every block that may carry ``cache_control``, in prompt order (tools, system, then
    the messages, a tool result's own blocks before it)."""
    blocks: list[Item] = [*payload.get("tools", []), *payload.get("system", [])]
    for message in payload["messages"]:
        for block in message["content"]:
            nested = block.get("content") if block["type"] == "tool_result" else None
            if isinstance(nested, list):
                blocks += nested
            blocks.append(block)
    return blocks


def _place_cache_breakpoints(payload: Item, automatic: bool, options: Any) -> None:
    """Mark at most four breakpoints, the newest kept: the client's (its parts'
    ``prompt_cache_breakpoint``) and, unless ``prompt_cache_options.mode`` is ``explicit``
    or the model's ``prompt_cache`` is ``off``, the gateway's own. A lifetime asked for in
    ``prompt_cache_options.ttl`` applies to the gateway's; a longer one never follows a
    shorter (the API refuses it): the blocks before a one-hour breakpoint are kept as long."""
    options = options if isinstance(options, dict) else {}
    blocks = _in_order(payload)
    explicit = {id(block) for block in blocks if "cache_control" in block}
    own: set[int] = set()
    if automatic and options.get("mode") != "explicit":
        own = {id(block) for block in _automatic_breakpoints(payload)} - explicit
    chosen = [block for block in blocks if id(block) in explicit or id(block) in own]
    for block in chosen[:-MAX_CACHE_BREAKPOINTS]:
        block.pop("cache_control", None)
    kept = chosen[-MAX_CACHE_BREAKPOINTS:]
    for block in kept:
        if id(block) in own:
            block["cache_control"] = cache_control({"ttl": options.get("ttl")})
    long_after = False
    for block in reversed(kept):
        if block["cache_control"].get("ttl") == "1h":
            long_after = True
        elif long_after:
            block["cache_control"] = {"type": "ephemeral", "ttl": "1h"}


def to_messages_request(
    body: Item, *, route: Route, stream: bool, state: ReasoningState
) -> MessagesRequest:
    """Translate a stateless Responses request (``input`` holds the full context).

    Raises :class:`UnsupportedInput` for an item or part this wire cannot express.
    """
    conversation = _Conversation(state)
    instructions = body.get("instructions")
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    earlier = earlier_reasoning(body)
    if isinstance(instructions, list):
        items = [*instructions, *items]
        earlier = frozenset(index + len(instructions) for index in earlier)
    elif isinstance(instructions, str) and instructions:
        conversation.system.append({"type": "text", "text": instructions})
    for index, item in enumerate(items):
        if index not in earlier:
            conversation.add(item, index)
    check_tool_pairs(conversation.messages, conversation.origins)
    tools, names = messages_tools(offered_tools(body))

    max_tokens = body.get("max_output_tokens") or route.max_output_tokens
    payload: Item = {
        "model": body["model"],
        "max_tokens": max_tokens,
        "messages": opened_by_user(conversation.messages),
    }
    if conversation.system:
        payload["system"] = conversation.system
    choice: Item | None = None
    if tools:
        payload["tools"] = tools
        choice = _tool_choice(body.get("tool_choice", "auto"), names)
        if body.get("parallel_tool_calls") is False and choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
        payload["tool_choice"] = choice
    thinking, output_config = _thinking(body, route, max_tokens)
    forced = choice is not None and choice["type"] in ("any", "tool")
    if thinking is not None and not forced and not _continues_without_thinking(payload["messages"]):
        payload["thinking"] = thinking
        if output_config is not None:
            payload["output_config"] = output_config
    if route.sampling == "send":
        payload.update(sampling(body, "thinking" in payload))
    fmt = ((body.get("text") or {}).get("format")) or {}
    if fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        payload.setdefault("output_config", {})["format"] = {
            "type": "json_schema",
            "schema": fmt["schema"],
        }
    stop = body.get("stop")
    if stop:
        payload["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    user = body.get("safety_identifier") or body.get("user")
    if user:
        payload["metadata"] = {"user_id": str(user)}
    _place_cache_breakpoints(
        payload, route.prompt_cache == "auto", body.get("prompt_cache_options")
    )
    if stream:
        payload["stream"] = True
    return MessagesRequest(payload, names)
