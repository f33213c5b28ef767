"""The ``web_search_call`` items and their stream events, shaped as OpenAI's SDK parses
them (``ResponseFunctionWebSearch``, ``response.web_search_call.*``)."""

from __future__ import annotations

from session import new_id

from ...results import Event, Item
from .backends import Result


def call_item() -> Item:
    return {
        "id": new_id("ws"),
        "type": "web_search_call",
        "status": "in_progress",
        "action": {"type": "search"},
    }


def searched(item: Item, query: str | None, results: list[Result], sources: bool) -> None:
    """Set the item's action: its query and, when the client asked, the sources."""
    action: Item = {"type": "search"}
    if query is not None:
        action["query"] = query
    if sources:
        action["sources"] = [{"type": "url", "url": result.url} for result in results]
    item["action"] = action


def progress(kind: str, index: int, item: Item) -> Event:
    """``response.web_search_call.in_progress``, ``.searching`` or ``.completed``."""
    return {
        "type": f"response.web_search_call.{kind}",
        "item_id": item["id"],
        "output_index": index,
    }
