"""What a client-executed built-in tool is to a wire that knows only functions."""

from __future__ import annotations

import json
from typing import Any, Protocol

from ...results import Item

Result = str | list[Item]
"""A call's result as the model reads it: text, or content parts (a screenshot)."""


class BuiltinTool(Protocol):
    """One built-in tool type the client runs (``shell``, ``apply_patch``, …), offered to a
    model without it as a function whose arguments mirror the native call's fields."""

    tool_types: frozenset[str]  # the ``tools[].type`` values it serves
    call_type: str  # the output item a call becomes: ``shell_call``
    output_type: str  # the input item that answers it: ``shell_call_output``
    id_prefix: str  # of the call item's ``id``

    def refusal(self, tool: Item) -> str | None:
        """Why this declaration cannot be run by the client (a hosted container), or None."""
        ...

    def function(self, tool: Item) -> tuple[str, str, Item]:
        """The function offered for ``tool``: its name, description and JSON schema."""
        ...

    def call(self, arguments: Item) -> Item:
        """The native call's own fields (``action``, ``operation``) from the arguments."""
        ...

    def arguments(self, call: Item) -> Item:
        """A native call item as the function arguments the model would have sent."""
        ...

    def result(self, output: Item, where: str) -> Result:
        """A native output item as the call's result the model reads."""
        ...


def parsed_arguments(arguments: str) -> Item:
    """A call's arguments as an object; an empty one where they do not parse."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def strings(value: Any) -> list[str]:
    """A list of strings from what a model sent for one: a string is a list of one."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(each) for each in value if each is not None]
    return []


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
