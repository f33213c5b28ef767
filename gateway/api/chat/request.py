"""A Chat Completions request -> the gateway's own Responses-shaped turn, with no I/O.

The turn is stateless (``store: false``): ``messages`` become input items, ``tools`` and
``tool_choice`` the Responses forms, ``response_format`` the ``text.format``. Fields only
Chat Completions knows (``stop``, ``seed``, ``logit_bias``) ride along as top-level
fields for the wires that read them. Every item remembers the message it came from, so a
refusal of an item names the message (``messages[2].content[1]``), not the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ...errors import APIError, invalid_request
from ..request_body import CreateResponseBody, check_create_body, validate_body
from .body import ChatCompletionBody
from .messages import to_items

# Chat fields the turn reads under another name, or the gateway consumes itself.
_TRANSLATED = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "max_tokens",
        "max_completion_tokens",
        "verbosity",
        "metadata",
        "store",
        "n",
        "logprobs",
        "top_logprobs",
        "stream",
        "stream_options",
        "modalities",
    }
)
_INDEXED = re.compile(r"^(input|tools)\[(\d+)\](.*)$")


@dataclass(frozen=True)
class ChatTurn:
    """The turn a Chat Completions request makes, and what its answer is shaped by."""

    body: CreateResponseBody
    model: str  # as the client named it
    origins: list[str]  # for each input item, the message it came from
    include_usage: bool
    logprobs: bool

    def chat_param(self, param: str | None) -> str | None:
        """A Responses param of the turn as the Chat request's own."""
        return chat_param(param, self.origins)


def chat_param(param: str | None, origins: list[str]) -> str | None:
    """A Responses param (``input[3].content[0]``) as the Chat request's own
    (``messages[2].content[0]``); ``origins`` names each input item's message."""
    if param is None:
        return None
    found = _INDEXED.match(param)
    if found is not None:
        kind, index, rest = found.group(1), int(found.group(2)), found.group(3)
        if kind == "tools":
            return f"tools[{index}]"
        return origins[index] + rest if index < len(origins) else "messages"
    for prefix, chat in (
        ("text", "response_format"),
        ("reasoning", "reasoning_effort"),
        ("max_output_tokens", "max_completion_tokens"),
        ("instructions", "messages"),
    ):
        if param == prefix or param.startswith((f"{prefix}.", f"{prefix}[")):
            return chat
    return param


def _tool(tool: Any, param: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise invalid_request(
            f"Invalid type for '{param}': expected an object.", param, "invalid_type"
        )
    kind = tool.get("type")
    if kind == "function":
        function = tool.get("function")
        if not isinstance(function, dict):
            raise invalid_request(
                f"Missing required parameter: '{param}.function'.",
                f"{param}.function",
                "missing_required_parameter",
            )
        converted = {"type": "function", **function}
        # Responses holds a function strict unless told; Chat Completions does not.
        converted["strict"] = function.get("strict") is True
        converted.setdefault("parameters", {"type": "object", "properties": {}})
        return converted
    if kind == "custom":
        custom = tool.get("custom")
        if not isinstance(custom, dict):
            raise invalid_request(
                f"Missing required parameter: '{param}.custom'.",
                f"{param}.custom",
                "missing_required_parameter",
            )
        return {"type": "custom", **custom}
    raise invalid_request(
        f"Invalid value for '{param}.type': expected 'function' or 'custom', got {kind!r}.",
        f"{param}.type",
        "invalid_value",
    )


def _named(choice: dict[str, Any], kind: str) -> dict[str, Any]:
    inner = choice.get(kind)
    if not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
        raise invalid_request(
            f"Missing required parameter: 'tool_choice.{kind}.name'.",
            f"tool_choice.{kind}.name",
            "missing_required_parameter",
        )
    return {"type": kind, "name": inner["name"]}


def _tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    if isinstance(choice, str):
        return choice
    kind = choice.get("type")
    if kind in ("function", "custom"):
        return _named(choice, str(kind))
    if kind == "allowed_tools":
        allowed = choice.get("allowed_tools")
        if not isinstance(allowed, dict) or not isinstance(allowed.get("tools"), list):
            raise invalid_request(
                "Missing required parameter: 'tool_choice.allowed_tools.tools'.",
                "tool_choice.allowed_tools.tools",
                "missing_required_parameter",
            )
        tools = [
            _named(tool, str(tool.get("type"))) if isinstance(tool, dict) else tool
            for tool in allowed["tools"]
        ]
        return {"type": "allowed_tools", "mode": allowed.get("mode", "auto"), "tools": tools}
    raise invalid_request(
        f"Invalid value for 'tool_choice.type': {kind!r}.", "tool_choice.type", "invalid_value"
    )


def _format(response_format: dict[str, Any]) -> dict[str, Any]:
    kind = response_format.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind != "json_schema":
        raise invalid_request(
            f"Invalid value for 'response_format.type': expected one of text, json_object, "
            f"json_schema, got {kind!r}.",
            "response_format.type",
            "invalid_value",
        )
    schema = response_format.get("json_schema")
    if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
        raise invalid_request(
            "Missing required parameter: 'response_format.json_schema.name'.",
            "response_format.json_schema.name",
            "missing_required_parameter",
        )
    fields = ("name", "schema", "strict", "description")
    return {"type": "json_schema", **{key: schema[key] for key in fields if key in schema}}


def _fields(chat: ChatCompletionBody) -> dict[str, Any]:
    """The Responses fields of the turn that map one to one (or near it)."""
    fields: dict[str, Any] = {"model": chat.model, "store": False, "stream": bool(chat.stream)}
    for key in (
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "user",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "service_tier",
        "metadata",
        "parallel_tool_calls",
        "stop",
        "seed",
        "logit_bias",
    ):
        if (value := getattr(chat, key)) is not None:
            fields[key] = value
    if chat.tools is not None:
        fields["tools"] = [_tool(tool, f"tools[{n}]") for n, tool in enumerate(chat.tools)]
    if chat.tool_choice is not None:
        fields["tool_choice"] = _tool_choice(chat.tool_choice)
    text: dict[str, Any] = {}
    if chat.response_format is not None:
        text["format"] = _format(chat.response_format)
    if chat.verbosity is not None:
        text["verbosity"] = chat.verbosity
    if text:
        fields["text"] = text
    if chat.reasoning_effort is not None:
        fields["reasoning"] = {"effort": chat.reasoning_effort}
        if chat.reasoning_effort != "none":  # a Responses upstream shows its reasoning so
            fields["reasoning"]["summary"] = "auto"
    if chat.logprobs:
        fields["include"] = ["message.output_text.logprobs"]
        if chat.top_logprobs is not None:
            fields["top_logprobs"] = chat.top_logprobs
    return fields


def to_turn(chat: ChatCompletionBody) -> ChatTurn:
    """The stateless turn ``chat`` asks for; a 400 naming the Chat param it cannot make."""
    fields = _fields(chat)
    for key, value in (chat.model_extra or {}).items():
        if key in CreateResponseBody.model_fields:  # a Responses field Chat does not have
            raise invalid_request(
                f"Unrecognized request argument supplied: {key}", key, "unknown_parameter"
            )
        if key not in _TRANSLATED:
            fields[key] = value
    items, origins = to_items(chat.messages)
    fields["input"] = items
    try:
        body = check_create_body(validate_body(CreateResponseBody, orjson.dumps(fields)))
    except APIError as error:
        error.param = chat_param(error.param, origins)
        raise
    limit = chat.max_completion_tokens or chat.max_tokens
    if limit is not None:  # Chat allows fewer than Responses' 16; the upstream decides
        body = body.model_copy(update={"max_output_tokens": limit})
    include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
    return ChatTurn(body, chat.model, origins, include_usage, bool(chat.logprobs))
