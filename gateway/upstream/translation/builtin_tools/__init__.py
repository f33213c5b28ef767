"""The built-in tools the client runs (``shell``, ``local_shell``, ``apply_patch``,
``computer``, ``tool_search`` with ``execution: "client"``), for wires whose models know only
functions: one module per tool says how it is offered as a function, how the model's call
becomes the native item (``shell_call``, …) and how that item's output reads back as the
call's result.

Everything here is pure; the wires use it through :func:`as_function_item` (history
items as function calls and their outputs) and :func:`native_call` (a call back as the
client's item).
"""

from __future__ import annotations

import json

from session import new_id

from ...results import Item
from .apply_patch import ApplyPatch
from .base import BuiltinTool, Result, parsed_arguments
from .computer import Computer
from .shell import LocalShell, Shell
from .tool_search import ToolSearch

BUILTINS: tuple[BuiltinTool, ...] = (Shell(), LocalShell(), ApplyPatch(), Computer(), ToolSearch())
TOOL_TYPES = frozenset(kind for tool in BUILTINS for kind in tool.tool_types)
CALL_TYPES = frozenset(tool.call_type for tool in BUILTINS)
OUTPUT_TYPES = frozenset(tool.output_type for tool in BUILTINS)
# The statuses each call item may have, where it cannot be ``incomplete``.
_NEVER_INCOMPLETE = frozenset({"apply_patch_call"})

__all__ = [
    "BUILTINS",
    "CALL_TYPES",
    "OUTPUT_TYPES",
    "TOOL_TYPES",
    "BuiltinTool",
    "Result",
    "as_function_item",
    "for_tool",
    "native_call",
]


def for_tool(kind: object) -> BuiltinTool | None:
    """The built-in serving tools of type ``kind``, if one does."""
    return next((tool for tool in BUILTINS if kind in tool.tool_types), None)


def _by_item(kind: object) -> BuiltinTool | None:
    return next((t for t in BUILTINS if kind in (t.call_type, t.output_type)), None)


def native_call(kind: str, call_id: str, arguments: str, status: str) -> Item:
    """The client's item for a call of the function offered for tool type ``kind``."""
    tool = for_tool(kind)
    assert tool is not None
    if status == "incomplete" and tool.call_type in _NEVER_INCOMPLETE:
        status = "in_progress"
    fields = tool.call(parsed_arguments(arguments))
    return {
        "id": new_id(tool.id_prefix),
        "type": tool.call_type,
        "call_id": call_id,
        **fields,
        "status": status,
    }


def as_function_item(item: Item, where: str) -> Item | None:
    """A built-in call or output of the history as the function call (or output) the
    model made (or read); ``None`` for any other item."""
    kind = item.get("type")
    tool = _by_item(kind)
    if tool is None:
        return None
    # local_shell_call_output names its call by ``id`` in OpenAI's reference, by
    # ``call_id`` as the Agents SDK sends it
    call_id = item.get("call_id") or item.get("id")
    name = tool.function({})[0]
    if kind == tool.call_type:
        arguments = json.dumps(tool.arguments(item))
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    output: Result = tool.result(item, where)
    return {"type": "function_call_output", "call_id": call_id, "output": output}
