"""The tools a translated model is offered: the request's, and those ``additional_tools``
items add in the middle of the context.

An ``additional_tools`` item (``{"type": "additional_tools", "role": "developer", "tools"}``)
makes its tools available from that point of a chain on. The Chat Completions and Messages
wires have one tool list per request, so its tools join the request's (the same tool twice
goes once) and the item itself is sent as nothing. A tool there that only the gateway or the
provider runs (``mcp``, ``web_search``, ...) is refused, naming it: only client tools can
join mid-conversation. A Responses upstream receives the item as it is.
"""

from __future__ import annotations

from .builtin_tools import for_tool
from .errors import UnsupportedInput
from .results import Item

_CLIENT_TOOLS = frozenset({"function", "custom", "namespace"})


def offered_tools(body: Item) -> list[Item]:
    """``body``'s tools, then each tool an ``additional_tools`` item of its input adds."""
    tools: list[Item] = list(body.get("tools") or [])
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else []):
        if item.get("type") != "additional_tools":
            continue
        for position, tool in enumerate(item.get("tools") or []):
            kind = tool.get("type") if isinstance(tool, dict) else None
            if kind not in _CLIENT_TOOLS and for_tool(kind) is None:
                raise UnsupportedInput(
                    f"Tools of type {kind!r} cannot be added by an additional_tools item on "
                    "this model: only function, custom, namespace and built-in client tools.",
                    f"input[{index}].tools[{position}].type",
                )
            if tool not in tools:
                tools.append(tool)
    return tools
