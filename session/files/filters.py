"""OpenAI's attribute filters of a search (comparison and compound), applied to a file's
attributes.

A comparison holds only between values of one kind: numbers with numbers, texts with
texts, booleans with booleans (``true`` is not ``1``). A missing key passes no comparison,
``ne`` and ``nin`` included. Texts order by code point. The SQL stores apply the same rule
in their queries (:mod:`session.files.filter_sql`); this module is its reference.
"""

from __future__ import annotations

from typing import Any, Literal

from .models import Attributes

COMPARISONS = frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"})
COMPOUNDS = frozenset({"and", "or"})
ORDERINGS = frozenset({"gt", "gte", "lt", "lte"})

Kind = Literal["boolean", "number", "text"]


def kind_of(value: Any) -> Kind | None:
    """Which kind of value a filter compares ``value`` as (``None``: none)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    return None


def _equal(have: Any, want: Any) -> bool:
    return kind_of(have) is not None and kind_of(have) == kind_of(want) and have == want


def _compare(kind: str, have: Any, want: Any) -> bool:
    if kind_of(have) is None:
        return False
    if kind in ("in", "nin"):
        found = isinstance(want, list) and any(_equal(have, w) for w in want)
        return found if kind == "in" else not found
    if kind == "eq":
        return _equal(have, want)
    if kind == "ne":
        return not _equal(have, want)
    if kind_of(have) != kind_of(want) or kind_of(have) == "boolean":
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
