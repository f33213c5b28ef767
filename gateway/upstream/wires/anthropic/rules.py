"""What the Messages API requires of a request and the Responses API does not. Pure.

Where the meaning is clear the request is made valid: a history that does not start with
a user turn gets a placeholder one first (as other gateways do), a function whose
``parameters`` leave out ``"type": "object"`` gets it (a tool's input is always an
object), a tool offered twice alike is offered once. Otherwise it is refused with an
:class:`UnsupportedInput` naming the parameter, before anything is stored or sent: a
``parameters`` schema of another type, two different tools of one name, a tool call the
history never answers.
"""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedInput
from ...results import Item
from ...translation.output_builder import ToolName
from ...translation.tools import (
    CUSTOM_INPUT_SCHEMA,
    builtin_function,
    custom_description,
    flat_name,
)

# What a history that starts with the model, or holds nothing, is opened with.
PLACEHOLDER_USER: Item = {"role": "user", "content": [{"type": "text", "text": "."}]}
EMPTY_SCHEMA: Item = {"type": "object", "properties": {}}
MIN_THINKING_TOP_P = 0.95


def _schema(parameters: Any, where: str) -> Item:
    if not parameters:
        return dict(EMPTY_SCHEMA)
    kind = parameters.get("type", "object")
    if kind != "object":
        raise UnsupportedInput(
            f"A function's parameters must be a JSON schema of type 'object' for an Anthropic "
            f"upstream (a tool's input is an object), not {kind!r}.",
            f"{where}.parameters",
        )
    return {"type": "object", **parameters}


def _offered(tools: list[Item]) -> list[tuple[str, Item, ToolName]]:
    """Each function and custom tool as (where it is, its Messages API entry, its name)."""
    found = []
    for index, tool in enumerate(tools):
        if (builtin := builtin_function(tool)) is not None:
            entry: Item = {"name": builtin.name, "input_schema": _schema(builtin.parameters, "")}
            if builtin.description:
                entry["description"] = builtin.description
            found.append((f"tools[{index}]", entry, builtin.client))
            continue
        namespace = tool.get("name") if tool.get("type") == "namespace" else None
        inner = tool.get("tools", []) if namespace is not None else [tool]
        for position, each in enumerate(inner):
            kind = each.get("type") if isinstance(each, dict) else None
            if kind not in ("function", "custom") or not each.get("name"):
                continue
            where = f"tools[{index}]" + (f".tools[{position}]" if namespace is not None else "")
            entry = {"name": flat_name(each["name"], namespace)}
            if kind == "custom":
                entry["input_schema"] = CUSTOM_INPUT_SCHEMA
                description = custom_description(each)
            else:
                entry["input_schema"] = _schema(each.get("parameters"), where)
                description = str(each.get("description") or "")
            if description:
                entry["description"] = description
            found.append((where, entry, ToolName(each["name"], namespace, kind == "custom")))
    return found


def messages_tools(tools: list[Item]) -> tuple[list[Item], dict[str, ToolName]]:
    """Function and custom tools as Messages API tools, of unique names (see ``..tools``)."""
    made: list[Item] = []
    names: dict[str, ToolName] = {}
    first: dict[str, tuple[str, Item]] = {}
    for where, entry, client in _offered(tools):
        seen = first.get(entry["name"])
        if seen is None:
            first[entry["name"]] = (where, entry)
            made.append(entry)
            names[entry["name"]] = client
        elif seen[1] != entry or names[entry["name"]] != client:
            raise UnsupportedInput(
                f"Tool names must be unique for an Anthropic upstream: '{entry['name']}' is "
                f"also the name of {seen[0]}.",
                f"{where}.name",
            )
    return made, names


def sampling(body: Item, thinking: bool) -> Item:
    """The ``temperature`` and ``top_p`` the API takes of a request's: both without thinking
    (``temperature`` on its scale, 0 to 1); with thinking no ``temperature`` (it must stay
    1) and ``top_p`` only from 0.95 to 1, as the API allows."""
    made: Item = {}
    temperature, top_p = body.get("temperature"), body.get("top_p")
    if temperature is not None and not thinking:
        if temperature > 1:
            raise UnsupportedInput(
                "An Anthropic model takes a temperature from 0 to 1.", "temperature"
            )
        made["temperature"] = temperature
    if top_p is not None and (not thinking or top_p >= MIN_THINKING_TOP_P):
        made["top_p"] = top_p
    return made


def opened_by_user(messages: list[Item]) -> list[Item]:
    """``messages`` starting with a user turn, as the API requires."""
    if messages and messages[0]["role"] == "user":
        return messages
    return [{**PLACEHOLDER_USER, "content": list(PLACEHOLDER_USER["content"])}, *messages]


Origins = dict[tuple[str, str], int]  # ("call" or "result", tool id) -> index in input


def check_tool_pairs(messages: list[Item], origins: Origins) -> None:
    """Every ``tool_use`` answered first thing in the next message, every ``tool_result``
    answering the message before; else a 400 naming the input item."""
    asked: set[str] = set()
    for message in messages:
        blocks = message["content"]
        if message["role"] == "user":
            for block in blocks:
                if block["type"] == "tool_result" and block["tool_use_id"] not in asked:
                    where = f"input[{origins.get(('result', block['tool_use_id']), 0)}]"
                    raise UnsupportedInput(
                        "A tool output must follow its call with nothing but other calls and "
                        "their outputs in between for an Anthropic upstream.",
                        where,
                    )
            answered = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
            _all_answered(asked - answered, origins)
            asked = set()
            continue
        _all_answered(asked, origins)
        uses = [block["id"] for block in blocks if block["type"] == "tool_use"]
        if len(set(uses)) != len(uses):
            twice = next(u for u in uses if uses.count(u) > 1)
            where = f"input[{origins.get(('call', twice), 0)}]"
            raise UnsupportedInput("Two tool calls in a row share one call_id.", where)
        asked = set(uses)
    _all_answered(asked, origins)


def _all_answered(unanswered: set[str], origins: Origins) -> None:
    if unanswered:
        index = min(origins.get(("call", u), 0) for u in unanswered)
        raise UnsupportedInput(
            "No tool output found for this tool call; an Anthropic upstream needs each "
            "call's output right after it.",
            f"input[{index}]",
        )
