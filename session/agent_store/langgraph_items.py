"""LangGraph long-term memory items (``BaseStore``): JSON objects under a namespace path and
a key, read and written in batches that run in one transaction.

A batch's reads see the store as it was before the batch; its puts then apply in order, the
last put of a (namespace, key) winning, as LangGraph's ``InMemoryStore`` does. Searches list
items oldest first; a search with the vector of a query ranks them by it (see
:mod:`.langgraph_vectors`), the items without vectors after the others.
"""

from __future__ import annotations

import json
from typing import Any

from ..sql import Operation, rows, run
from . import langgraph_vectors as vectors
from .errors import bad_request
from .values import check_key, json_text

ITEM = "project = :project AND namespace = :namespace AND path = :path AND key = :key"
OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def _path(value: Any, name: str = "namespace") -> list[str]:
    if not isinstance(value, list) or not all(isinstance(label, str) for label in value):
        raise bad_request(f"{name} is a list of strings.")
    return value


def _item(row: tuple[Any, ...]) -> dict[str, Any]:
    path, key, value, created_at, updated_at = row
    return {
        "namespace": json.loads(path),
        "key": key,
        "value": json.loads(value),
        "created_at": float(created_at),
        "updated_at": float(updated_at),
    }


def _compare(value: Any, wanted: Any) -> bool:
    """JSONB-like containment with ``$eq``/``$ne``/``$gt``/… operators (as ``InMemoryStore``)."""
    if isinstance(wanted, dict):
        if any(name.startswith("$") for name in wanted):
            return all(_operator(value, name, operand) for name, operand in wanted.items())
        return isinstance(value, dict) and all(
            _compare(value.get(name), part) for name, part in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(value, list)
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(value == operand)
    if name == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right}.get(
        name, left <= right
    )


def _check_operators(wanted: Any) -> None:
    """Refuse an unknown ``$`` operator before any item is compared."""
    if isinstance(wanted, dict):
        for name, part in wanted.items():
            if name.startswith("$") and name not in OPERATORS:
                raise bad_request(f"Unsupported filter operator {name}.")
            _check_operators(part)
    elif isinstance(wanted, list):
        for part in wanted:
            _check_operators(part)


def _search(project: str, namespace: str, op: dict[str, Any]) -> Operation:
    prefix = json_text(_path(op.get("namespace_prefix"), "namespace_prefix"))
    wanted, limit, offset = op.get("filter") or {}, op.get("limit", 10), op.get("offset", 0)
    if not isinstance(wanted, dict):
        raise bad_request("filter is an object.")
    _check_operators(wanted)
    if not isinstance(limit, int) or not isinstance(offset, int):
        raise bad_request("limit and offset are integers.")
    clause, params = "", dict[str, Any]()
    if prefix != "[]":
        opening = prefix[:-1] + ","  # '["a"' + ',': the paths below ["a"]
        clause = " AND (path = :prefix OR substr(path, 1, :length) = :opening)"
        params = {"prefix": prefix, "length": len(opening), "opening": opening}
    query = op.get("query_vector")
    query_vector = None if query is None else vectors.decode(query, "query_vector")
    found = yield rows(
        "SELECT path, key, value, created_at, updated_at FROM lg_items"
        f" WHERE project = :project AND namespace = :namespace{clause}"
        " ORDER BY created_at, path, key",
        project=project,
        namespace=namespace,
        **params,
    )
    if wanted:
        found = [row for row in found if _compare(json.loads(row[2]), wanted)]
    if query_vector is None:
        return [_item(row) for row in found[offset : offset + limit]]
    indexed = yield from vectors.under(project, namespace, clause, params)
    keys = [(row[0], row[1]) for row in found]
    order = vectors.ranked(keys, indexed, query_vector)[offset : offset + limit]
    return [{**_item(found[n]), "score": score} for n, score in order]


def _check_condition(condition: Any) -> None:
    if not isinstance(condition, dict) or condition.get("match_type") not in ("prefix", "suffix"):
        raise bad_request("A match condition is {match_type: prefix|suffix, path: [...]}.")
    _path(condition.get("path"), "path")


def _matches(path: list[str], condition: dict[str, Any]) -> bool:
    wanted: list[str] = condition["path"]
    if len(path) < len(wanted):
        return False
    if condition["match_type"] == "suffix":
        path, wanted = path[::-1], wanted[::-1]
    pairs = zip(path, wanted, strict=False)
    return all(want in ("*", label) for label, want in pairs)


def _namespaces(project: str, namespace: str, op: dict[str, Any]) -> Operation:
    conditions, depth = op.get("match_conditions") or [], op.get("max_depth")
    limit, offset = op.get("limit", 100), op.get("offset", 0)
    if not isinstance(conditions, list) or (depth is not None and not isinstance(depth, int)):
        raise bad_request("match_conditions is a list and max_depth an integer.")
    if not isinstance(limit, int) or not isinstance(offset, int):
        raise bad_request("limit and offset are integers.")
    for condition in conditions:
        _check_condition(condition)
    found = yield rows(
        "SELECT DISTINCT path FROM lg_items WHERE project = :project AND namespace = :namespace",
        project=project,
        namespace=namespace,
    )
    paths = [json.loads(row[0]) for row in found]
    kept = {
        tuple(path if depth is None else path[:depth])
        for path in paths
        if all(_matches(path, condition) for condition in conditions)
    }
    return [list(path) for path in sorted(kept)][offset : offset + limit]


def _get(project: str, namespace: str, op: dict[str, Any]) -> Operation:
    found = yield rows(
        f"SELECT path, key, value, created_at, updated_at FROM lg_items WHERE {ITEM}",
        project=project,
        namespace=namespace,
        path=json_text(_path(op.get("namespace"))),
        key=op.get("key"),
    )
    return _item(found[0]) if found else None


def _put(project: str, namespace: str, op: dict[str, Any], now: float) -> Operation:
    path = check_key(json_text(_path(op.get("namespace"))), "namespace", empty=True)
    where = {
        "project": project,
        "namespace": namespace,
        "path": path,
        "key": check_key(op["key"], "key", empty=True),
    }
    value = op.get("value")
    if value is not None and not isinstance(value, dict):
        raise bad_request("A put's value is an object, or null to delete.")
    yield from vectors.replace(
        where, vectors.fields(op.get("vectors")) if value is not None else []
    )
    if value is None:
        yield run(f"DELETE FROM lg_items WHERE {ITEM}", **where)
        return None
    yield run(
        "INSERT INTO lg_items (project, namespace, path, key, value, created_at, updated_at)"
        " VALUES (:project, :namespace, :path, :key, :value, :now, :now)"
        " ON CONFLICT (project, namespace, path, key)"
        " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        **where,
        value=json_text(value),
        now=now,
    )
    return None


def batch(project: str, namespace: str, ops: list[Any], now: float) -> Operation:
    """Run ``ops`` (``{"op": "get"|"search"|"list_namespaces"|"put", ...}``); one result each."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise bad_request("ops is a list of objects.")
    results: list[Any] = []
    puts: dict[tuple[str, str], dict[str, Any]] = {}
    for op in ops:
        kind = op.get("op")
        if kind in ("get", "put") and not isinstance(op.get("key"), str):
            raise bad_request("key is a string.")
        if kind == "get":
            results.append((yield from _get(project, namespace, op)))
        elif kind == "search":
            results.append((yield from _search(project, namespace, op)))
        elif kind == "list_namespaces":
            results.append((yield from _namespaces(project, namespace, op)))
        elif kind == "put":
            puts[(json_text(_path(op.get("namespace"))), op["key"])] = op
            results.append(None)
        else:
            raise bad_request(f"Unknown store operation {kind!r}.")
    for op in puts.values():
        yield from _put(project, namespace, op, now)
    return results
