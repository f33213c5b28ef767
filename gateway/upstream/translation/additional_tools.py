"""The tools a translated model is offered: the request's, less those deferred, and those
``additional_tools`` and ``tool_search_output`` items add in the middle of the context.

An ``additional_tools`` item (``{"type": "additional_tools", "role": "developer", "tools"}``)
makes its tools available from that point of a chain on. The Chat Completions and Messages
wires have one tool list per request, so its tools join the request's (the same tool twice
goes once) and the item itself is sent as nothing. A tool there that only the gateway or the
provider runs (``mcp``, ``web_search``, ...) is refused, naming it: only client tools can
join mid-conversation. A Responses upstream receives the item as it is.

A function declared with ``defer_loading: true`` is not offered until a ``tool_search_output``
(the client's answer to a ``tool_search`` call, see :mod:`.builtin_tools.tool_search`) of the
context loads it: the definitions that output holds are offered from there on.
"""

from __future__ import annotations

from ..errors import UnsupportedInput
from ..results import Item
from .builtin_tools import for_tool

_CLIENT_TOOLS = frozenset({"function", "custom", "namespace"})


def offered_tools(body: Item) -> list[Item]:
    """``body``'s tools but the deferred ones, then each tool an ``additional_tools`` or a
    ``tool_search_output`` item of its input adds."""
    tools: list[Item] = [t for t in map(_loaded_now, body.get("tools") or []) if t is not None]
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else []):
        kind = item.get("type")
        if kind not in ("additional_tools", "tool_search_output"):
            continue
        for position, tool in enumerate(item.get("tools") or []):
            kind = tool.get("type") if isinstance(tool, dict) else None
            if kind not in _CLIENT_TOOLS and for_tool(kind) is None:
                raise UnsupportedInput(
                    f"Tools of type {kind!r} cannot be added by an {item['type']} item on "
                    "this model: only function, custom, namespace and built-in client tools.",
                    f"input[{index}].tools[{position}].type",
                )
            if tool not in tools:
                tools.append(tool)
    return tools


def _loaded_now(tool: Item) -> Item | None:
    """``tool`` as offered before any search: ``None`` if deferred, a namespace without its
    deferred functions (``None`` if that leaves none)."""
    if tool.get("defer_loading") is True:
        return None
    if tool.get("type") != "namespace" or not isinstance(tool.get("tools"), list):
        return tool
    inner = [t for t in tool["tools"] if not (isinstance(t, dict) and t.get("defer_loading"))]
    return {**tool, "tools": inner} if inner else None
