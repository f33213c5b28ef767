"""Each call the gateway runs for a model as an ``execute_tool`` span (the GenAI
conventions'): the tool, its call id, its kind and how it ended; its arguments and result
only when content capture is on."""

from __future__ import annotations

from collections.abc import Awaitable

from ...tracing import Tracer, begin, failed, finish
from ..results import Item
from .kind import Kind

# ``gen_ai.tool.type`` by the kind's label: a tool run against an outside service.
_TOOL_TYPES = {"MCP": "extension", "web search": "extension", "file search": "datastore"}


def _tool_name(item: Item, kind: Kind) -> str:
    return str(item.get("name") or item.get("type") or kind.label)


async def traced_call(
    tracer: Tracer,
    kind: Kind,
    item: Item,
    arguments: str,
    call: Awaitable[str],
) -> str:
    """Await ``call`` (one of ``kind``'s calls, for ``item``) in its span and as a step of
    the turn's timeline; what it answers."""
    name = _tool_name(item, kind)
    step = begin("tool", name, tool=kind.label)
    try:
        if not tracer.enabled:
            return await call
        return await _traced(tracer, kind, item, name, arguments, call)
    finally:
        finish(step, status=str(item.get("status") or "completed"))


async def _traced(
    tracer: Tracer, kind: Kind, item: Item, name: str, arguments: str, call: Awaitable[str]
) -> str:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": _TOOL_TYPES.get(kind.label, "extension"),
        "gateway.tool.kind": kind.label,
    }
    if item.get("id"):
        attributes["gen_ai.tool.call.id"] = str(item["id"])
    if item.get("server_label"):
        attributes["gateway.mcp.server"] = str(item["server_label"])
    with tracer.span(f"execute_tool {name}", attributes=attributes) as span:
        tracer.content(span, "gen_ai.tool.call", {"gen_ai.tool.call.arguments": arguments})
        output = await call
        status = item.get("status")
        if isinstance(status, str):
            span.set_attribute("gateway.tool.status", status)
        if item.get("error") or status in ("failed", "incomplete"):
            failed(span, str(item.get("error") or status), "tool_error")
        tracer.content(span, "gen_ai.tool.result", {"gen_ai.tool.call.result": output})
        return output
