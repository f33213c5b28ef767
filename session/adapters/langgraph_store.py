"""LangGraph long-term memory (``BaseStore``) on the gateway's store."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from .backend import OnBackend


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _encode(op: Op) -> dict[str, Any]:
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": list(op.namespace), "key": op.key}
    if isinstance(op, PutOp):
        value = None if op.value is None else json.loads(json.dumps(op.value))
        return {"op": "put", "namespace": list(op.namespace), "key": op.key, "value": value}
    if isinstance(op, SearchOp):
        if op.query:
            raise NotImplementedError(
                "GatewayStore has no vector index: search by namespace prefix and filter, "
                "without a query string."
            )
        return {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": json.loads(json.dumps(op.filter)) if op.filter else None,
            "limit": op.limit,
            "offset": op.offset,
        }
    if isinstance(op, ListNamespacesOp):
        return {
            "op": "list_namespaces",
            "match_conditions": [
                {"match_type": c.match_type, "path": list(c.path)}
                for c in op.match_conditions or ()
            ],
            "max_depth": op.max_depth,
            "limit": op.limit,
            "offset": op.offset,
        }
    raise ValueError(f"Unknown operation type: {type(op).__name__}")


def _item(data: dict[str, Any], kind: type[Item] = Item) -> Item:
    return kind(
        value=data["value"],
        key=data["key"],
        namespace=tuple(data["namespace"]),
        created_at=_time(data["created_at"]),
        updated_at=_time(data["updated_at"]),
    )


def _decode(op: Op, result: Any) -> Result:
    if isinstance(op, GetOp):
        return None if result is None else _item(result)
    if isinstance(op, SearchOp):
        return [_item(data, SearchItem) for data in result]
    if isinstance(op, ListNamespacesOp):
        return [tuple(path) for path in result]
    return None


class GatewayStore(OnBackend, BaseStore):
    """Namespaced JSON documents: ``put``, ``get``, ``delete``, ``search`` by namespace
    prefix with ``filter``/``limit``/``offset``, ``list_namespaces``. No vector index.

    ``connect(base_url, ...)`` through a gateway, or ``from_store(store, ...)`` in process.
    A batch runs in one transaction.
    """

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        if not listed:
            return []
        results = self._backend.call_sync("langgraph.store", ops=[_encode(op) for op in listed])
        return [_decode(op, result) for op, result in zip(listed, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        if not listed:
            return []
        results = await self._backend.call("langgraph.store", ops=[_encode(op) for op in listed])
        return [_decode(op, result) for op, result in zip(listed, results, strict=True)]
