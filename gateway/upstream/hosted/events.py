"""The output-item events every tool the gateway runs sends for its items, each with a
snapshot of the item as it stands (the item changes after the event is made)."""

from __future__ import annotations

from ..results import Event, Item
from ..translation.output_builder import snapshot


def added(index: int, item: Item) -> Event:
    return {"type": "response.output_item.added", "output_index": index, "item": snapshot(item)}


def done(index: int, item: Item) -> Event:
    return {"type": "response.output_item.done", "output_index": index, "item": snapshot(item)}
