"""``tool_search`` run by the client: the model asks for tools, the client answers with the
definitions it loads (``tool_search_output``), which the model is offered from then on.

Functions declared with ``defer_loading: true`` stay out of a translated model's tool list
until a ``tool_search_output`` of the context loads them (see
:mod:`gateway.upstream.translation.additional_tools`). A search the provider runs (``execution:
"server"``, the default) has no client to run it on these wires and is refused.
"""

from __future__ import annotations

import json

from ...results import Item
from .base import Result

_SCHEMA: Item = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the tools you need should do."}
    },
    "required": ["query"],
}
_ABOUT = (
    "Search for more tools. Some tools are not loaded yet: describe what you need, and the "
    "tools found are offered to you from the next step on."
)


class ToolSearch:
    tool_types = frozenset({"tool_search"})
    call_type = "tool_search_call"
    output_type = "tool_search_output"
    id_prefix = "tsc"

    def refusal(self, tool: Item) -> str | None:
        if tool.get("execution") == "client":
            return None
        return "a search the provider runs (execution: 'server')"

    def function(self, tool: Item) -> tuple[str, str, Item]:
        parameters = tool.get("parameters")
        return (
            "tool_search",
            str(tool.get("description") or _ABOUT),
            parameters if isinstance(parameters, dict) else _SCHEMA,
        )

    def call(self, arguments: Item) -> Item:
        return {"arguments": arguments, "execution": "client"}

    def arguments(self, call: Item) -> Item:
        arguments = call.get("arguments")
        return dict(arguments) if isinstance(arguments, dict) else {}

    def result(self, output: Item, where: str) -> Result:
        loaded = [_named(tool) for tool in output.get("tools") or [] if isinstance(tool, dict)]
        return json.dumps({"loaded_tools": loaded})


def _named(tool: Item) -> str:
    if tool.get("type") == "namespace":
        inner = [str(t.get("name")) for t in tool.get("tools") or [] if isinstance(t, dict)]
        return f"{tool.get('name')}: {', '.join(inner)}"
    return str(tool.get("name") or tool.get("type"))
