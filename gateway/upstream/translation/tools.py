"""The client's tools as a model without hosted tools is offered them: functions of flat names.

``function`` tools pass as they are; ``custom`` (free-form input) tools, such as a coding
agent's ``apply_patch``, become functions of one string, ``input``, their grammar in the
description; ``namespace`` groups are flattened to ``namespace__name``; the built-in tools
the client runs (``shell``, ``apply_patch``, ``computer``, …) become the functions of
:mod:`.builtin_tools`. Tools the gateway or no one runs are not offered here: the turn
refused those it cannot serve before (:mod:`.tool_support`). Each keeps how its calls go
back to the client (:class:`ToolName`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..results import Item
from .builtin_tools import for_tool
from .output_builder import ToolName

NAMESPACE_SEPARATOR = "__"
CUSTOM_INPUT_SCHEMA: Item = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's free-form input."}},
    "required": ["input"],
}


def flat_name(name: str, namespace: str | None) -> str:
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}" if namespace else name


@dataclass(frozen=True)
class FunctionTool:
    name: str  # flat
    description: str
    parameters: Item | None
    strict: Any
    client: ToolName


def custom_description(tool: Item) -> str:
    """A custom tool's description, its grammar (if any) appended."""
    description = tool.get("description") or ""
    grammar = tool.get("format") or {}
    if grammar.get("type") == "grammar" and grammar.get("definition"):
        description += (
            f"\n\nThe input must follow this {grammar.get('syntax', '')} grammar:\n"
            f"{grammar['definition']}"
        )
    return str(description).strip()


def builtin_function(tool: Item) -> FunctionTool | None:
    """The function a built-in client tool (shell, apply_patch, computer) is offered as."""
    builtin = for_tool(tool.get("type"))
    if builtin is None or builtin.refusal(tool) is not None:
        return None
    name, description, parameters = builtin.function(tool)
    return FunctionTool(name, description, parameters, None, ToolName(name, builtin=tool["type"]))


def _function(tool: Item, namespace: str | None) -> FunctionTool | None:
    kind = tool.get("type")
    if namespace is None and (builtin := builtin_function(tool)) is not None:
        return builtin
    if kind not in ("function", "custom") or not tool.get("name"):
        return None
    name = flat_name(tool["name"], namespace)
    client = ToolName(tool["name"], namespace, kind == "custom")
    if kind == "custom":
        return FunctionTool(name, custom_description(tool), CUSTOM_INPUT_SCHEMA, None, client)
    description = tool.get("description") or ""
    return FunctionTool(name, description, tool.get("parameters"), tool.get("strict"), client)


def function_tools(tools: list[Item]) -> list[FunctionTool]:
    """The function, custom and built-in client tools of ``tools`` as functions,
    namespaces flattened, in order."""
    found = []
    for tool in tools:
        inner = tool.get("tools", []) if tool.get("type") == "namespace" else [tool]
        namespace = tool.get("name") if tool.get("type") == "namespace" else None
        found += [f for f in (_function(each, namespace) for each in inner) if f is not None]
    return found


def forced_function(choice: object, names: dict[str, ToolName]) -> str | None:
    """The offered function a ``tool_choice`` forces: one named (``function``, ``custom``)
    or the one offered for a built-in type (``{"type": "shell"}``); ``None`` if neither."""
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind in ("function", "custom"):
        name = flat_name(str(choice.get("name", "")), choice.get("namespace"))
        return name if name in names else None
    wanted = "computer_use_preview" if kind == "computer_use" else kind
    builtin = for_tool(wanted)
    return next(
        (
            name
            for name, client in names.items()
            if client.builtin is not None and for_tool(client.builtin) is builtin
        ),
        None,
    )
