"""OpenAI's attribute filters as a condition of an SQL query, over a column holding a file's
attributes as JSON text, with the meaning :mod:`session.files.filters` gives them.

The filter runs in the query that reads a search's candidates, so a vector index sees only
the files that pass it and a search never reads what it would throw away.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from typing import Any

from ..sql.dialect import Dialect
from .filters import COMPOUNDS, ORDERINGS, kind_of

_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_SQLITE_TYPES = {"boolean": None, "number": "type IN ('integer', 'real')", "text": "type = 'text'"}


def filter_condition(
    dialect: Dialect, condition: dict[str, Any] | None, column: str
) -> tuple[str, dict[str, Any]]:
    """``condition`` as SQL over ``column`` (``TRUE`` when there is none) and its parameters."""
    if condition is None:
        return "1 = 1", {}
    params: dict[str, Any] = {}
    return _condition(dialect, condition, column, params, count()), params


def _condition(
    dialect: Dialect,
    condition: dict[str, Any],
    column: str,
    params: dict[str, Any],
    n: Iterator[int],
) -> str:
    kind = condition.get("type")
    if kind in COMPOUNDS:
        parts = [_condition(dialect, p, column, params, n) for p in condition.get("filters") or []]
        joined = (" AND " if kind == "and" else " OR ").join(f"({p})" for p in parts)
        return joined or ("1 = 1" if kind == "and" else "1 = 0")
    key = f"fk{next(n)}"
    params[key] = str(condition.get("key"))
    value = condition.get("value")
    if dialect.postgres:
        return _postgres(str(kind), value, column, key, params, n)
    return _sqlite(str(kind), value, column, key, params, n)


def _sqlite(
    kind: str, value: Any, column: str, key: str, params: dict[str, Any], n: Iterator[int]
) -> str:
    """One comparison over the attribute's ``json_each`` row (its ``type`` and ``value``)."""

    def equal(want: Any) -> str:
        found = kind_of(want)
        if found == "boolean":
            return f"type = '{'true' if want else 'false'}'"
        if found is None:
            return "0"
        name = f"fv{next(n)}"
        params[name] = want
        return f"({_SQLITE_TYPES[found]} AND value = :{name})"

    if kind in ("eq", "ne"):
        test = equal(value)
    elif kind in ("in", "nin"):
        listed = value if isinstance(value, list) else []
        test = " OR ".join(equal(want) for want in listed) or "0"
    elif kind in ORDERINGS and kind_of(value) in ("number", "text"):
        name = f"fv{next(n)}"
        params[name] = value
        kind_test = _SQLITE_TYPES[str(kind_of(value))]
        test = f"{kind_test} AND value {_OPERATORS[kind]} :{name} COLLATE BINARY"
    else:
        return "0"
    if kind in ("ne", "nin"):
        test = f"type != 'null' AND NOT ({test})"
    return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE key = :{key} AND ({test}))"


def _postgres(
    kind: str, value: Any, column: str, key: str, params: dict[str, Any], n: Iterator[int]
) -> str:
    """One comparison over the attribute as ``jsonb``: equal values of one kind are equal
    ``jsonb`` (``1`` and ``1.0`` too, ``true`` and ``1`` not)."""
    found = f"({column}::jsonb -> :{key})"

    def equal(want: Any) -> str:
        if kind_of(want) is None:
            return "FALSE"
        name = f"fv{next(n)}"
        params[name] = json.dumps(want)
        return f"{found} = (:{name})::jsonb"

    if kind in ("eq", "ne"):
        test = equal(value)
    elif kind in ("in", "nin"):
        listed = value if isinstance(value, list) else []
        test = " OR ".join(equal(want) for want in listed) or "FALSE"
    elif kind in ORDERINGS and kind_of(value) in ("number", "text"):
        name = f"fv{next(n)}"
        params[name] = value
        operator = _OPERATORS[kind]
        if kind_of(value) == "number":
            typed = "'number'", f"({found})::double precision {operator} :{name}"
        else:
            typed = "'string'", f"({column}::jsonb ->> :{key}) COLLATE BINARY {operator} :{name}"
        return f"(CASE WHEN jsonb_typeof({found}) = {typed[0]} THEN {typed[1]} ELSE FALSE END)"
    else:
        return "FALSE"
    if kind in ("ne", "nin"):
        return f"coalesce(jsonb_typeof({found}) <> 'null' AND NOT ({test}), FALSE)"
    return f"coalesce({test}, FALSE)"
