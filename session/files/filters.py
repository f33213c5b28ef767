"""OpenAI's attribute filters of a search (comparison and compound), applied to a file's
attributes."""

from __future__ import annotations

from typing import Any

from .models import Attributes

COMPARISONS = frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"})
COMPOUNDS = frozenset({"and", "or"})


def _ordered(left: Any, right: Any) -> bool:
    """Whether two values compare by order: both numbers, or both texts."""
    numbers = (int, float)
    if isinstance(left, bool) or isinstance(right, bool):
        return False
    return (isinstance(left, numbers) and isinstance(right, numbers)) or (
        isinstance(left, str) and isinstance(right, str)
    )


def _compare(kind: str, have: Any, want: Any) -> bool:
    if kind in ("in", "nin"):
        found = isinstance(want, list) and have in want
        return found if kind == "in" else have is not None and not found
    if kind == "eq":
        return (have == want and type(have) is not bool) or have is want
    if kind == "ne":
        return have is not None and not ((have == want and type(have) is not bool) or have is want)
    if have is None or not _ordered(have, want):
        return False
    if kind == "gt":
        return bool(have > want)
    if kind == "gte":
        return bool(have >= want)
    if kind == "lt":
        return bool(have < want)
    return bool(have <= want)


def matches(condition: dict[str, Any] | None, attributes: Attributes) -> bool:
    """Whether ``attributes`` pass ``condition`` (``None``: every file passes)."""
    if condition is None:
        return True
    kind = condition.get("type")
    if kind in COMPOUNDS:
        parts = [matches(part, attributes) for part in condition.get("filters") or []]
        return all(parts) if kind == "and" else any(parts)
    return _compare(str(kind), attributes.get(str(condition.get("key"))), condition.get("value"))
