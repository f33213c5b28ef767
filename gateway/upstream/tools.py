"""The client's tools as a model without hosted tools is offered them: functions of flat names.

``function`` tools pass as they are; ``custom`` (free-form input) tools, such as a coding
agent's ``apply_patch``, become functions of one string, ``input``, their grammar in the
description; ``namespace`` groups are flattened to ``namespace__name``; hosted tools
(``web_search``, ``file_search``, ``mcp``, …) are left out. Each keeps how its calls go
back to the client (:class:`ToolName`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .output_builder import ToolName
from .results import Item

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


def _function(tool: Item, namespace: str | None) -> FunctionTool | None:
    kind = tool.get("type")
    if kind not in ("function", "custom") or not tool.get("name"):
        return None
    name = flat_name(tool["name"], namespace)
    client = ToolName(tool["name"], namespace, kind == "custom")
    if kind == "custom":
        return FunctionTool(name, custom_description(tool), CUSTOM_INPUT_SCHEMA, None, client)
    description = tool.get("description") or ""
    return FunctionTool(name, description, tool.get("parameters"), tool.get("strict"), client)


def function_tools(tools: list[Item]) -> list[FunctionTool]:
    """The function and custom tools of ``tools``, namespaces flattened, in order."""
    found = []
    for tool in tools:
        inner = tool.get("tools", []) if tool.get("type") == "namespace" else [tool]
        namespace = tool.get("name") if tool.get("type") == "namespace" else None
        found += [f for f in (_function(each, namespace) for each in inner) if f is not None]
    return found
