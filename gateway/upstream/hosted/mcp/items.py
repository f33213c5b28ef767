"""The MCP output items and their stream events, shaped as OpenAI's SDK parses them."""

from __future__ import annotations

from typing import Any

from session import new_id

from ...results import Event, Item


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


def progress(kind: str, index: int, item: Item, **fields: Any) -> Event:
    """``response.mcp_call.in_progress`` and the like: the item's id and index."""
    return {"type": kind, "item_id": item["id"], "output_index": index, **fields}
