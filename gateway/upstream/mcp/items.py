"""The MCP output items and their stream events, shaped as OpenAI's SDK parses them."""

from __future__ import annotations

from typing import Any

from session import new_id

from ..output_builder import snapshot
from ..results import Event, Item, complete_usage


def list_tools_item(label: str) -> Item:
    return {"id": new_id("mcpl"), "type": "mcp_list_tools", "server_label": label, "tools": []}


def call_item(label: str, name: str, approval_request_id: str | None = None) -> Item:
    item: Item = {
        "id": new_id("mcp"),
        "type": "mcp_call",
        "server_label": label,
        "name": name,
        "arguments": "",
        "output": None,
        "error": None,
        "status": "in_progress",
    }
    if approval_request_id is not None:
        item["approval_request_id"] = approval_request_id
    return item


def approval_item(label: str, name: str, arguments: str) -> Item:
    return {
        "id": new_id("mcpr"),
        "type": "mcp_approval_request",
        "server_label": label,
        "name": name,
        "arguments": arguments,
    }


def added(index: int, item: Item) -> Event:
    return {"type": "response.output_item.added", "output_index": index, "item": snapshot(item)}


def done(index: int, item: Item) -> Event:
    return {"type": "response.output_item.done", "output_index": index, "item": snapshot(item)}


def progress(kind: str, index: int, item: Item, **fields: Any) -> Event:
    """``response.mcp_call.in_progress`` and the like: the item's id and index."""
    return {"type": kind, "item_id": item["id"], "output_index": index, **fields}


def _add_counts(a: Any, b: Any) -> int:
    return (a if isinstance(a, int) else 0) + (b if isinstance(b, int) else 0)


def summed_usage(total: Item | None, more: Item | None) -> Item | None:
    """The usage of two model calls of one turn, added up."""
    if more is None:
        return total
    if total is None:
        return complete_usage(more)
    total, more = complete_usage(total) or {}, complete_usage(more) or {}
    summed: Item = {
        key: _add_counts(total.get(key), more.get(key))
        for key in ("input_tokens", "output_tokens", "total_tokens")
    }
    for details in ("input_tokens_details", "output_tokens_details"):
        first, second = total.get(details) or {}, more.get(details) or {}
        summed[details] = {k: _add_counts(first.get(k), second.get(k)) for k in {*first, *second}}
    return summed
