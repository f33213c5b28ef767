"""Cursor pagination over an ordered item list, as OpenAI's list endpoints do it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .errors import InvalidCursor
from .models import Item, ItemPage

Order = Literal["asc", "desc"]


def _index_of(items: Sequence[Item], item_id: str, param: str) -> int:
    for index, item in enumerate(items):
        if item.get("id") == item_id:
            return index
    raise InvalidCursor(param, item_id)


def page_items(
    items: Sequence[Item],
    *,
    after: str | None = None,
    before: str | None = None,
    limit: int = 20,
    order: Order = "desc",
) -> ItemPage:
    """Return the page of ``items`` (stored oldest first) selected by the cursors.

    ``order`` sets the direction of the list; ``after`` keeps the items that follow the
    given id in that direction and ``before`` the items that precede it.
    """
    ordered = list(items) if order == "asc" else list(reversed(items))
    start, end = 0, len(ordered)
    if after is not None:
        start = _index_of(ordered, after, "after") + 1
    if before is not None:
        end = _index_of(ordered, before, "before")
    window = ordered[start:end] if start < end else []
    return ItemPage.of(window[:limit], has_more=len(window) > limit)
