"""LangGraph long-term memory (``BaseStore``) on the gateway's store, with semantic search
when made with an ``index``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Self

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..store import SessionStore
from .backend import Backend, OnBackend
from .gateway_embeddings import GatewayEmbeddings
from .langgraph_index import StoreIndex, Vectors

NO_VECTORS: Vectors = ({}, {})


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _encode(n: int, op: Op, vectors: Vectors, indexed: bool) -> dict[str, Any]:
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": list(op.namespace), "key": op.key}
    if isinstance(op, PutOp):
        value = None if op.value is None else json.loads(json.dumps(op.value))
        put = {"op": "put", "namespace": list(op.namespace), "key": op.key, "value": value}
        return {**put, "vectors": vectors[0].get(n, [])} if indexed else put
    if isinstance(op, SearchOp):
        search = {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": json.loads(json.dumps(op.filter)) if op.filter else None,
            "limit": op.limit,
            "offset": op.offset,
        }
        query = vectors[1].get(op.query) if op.query else None
        return search if query is None else {**search, "query_vector": query}
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


def _item(data: dict[str, Any]) -> Item:
    return Item(
        value=data["value"],
        key=data["key"],
        namespace=tuple(data["namespace"]),
        created_at=_time(data["created_at"]),
        updated_at=_time(data["updated_at"]),
    )


def _search_item(data: dict[str, Any]) -> SearchItem:
    return SearchItem(
        value=data["value"],
        key=data["key"],
        namespace=tuple(data["namespace"]),
        created_at=_time(data["created_at"]),
        updated_at=_time(data["updated_at"]),
        score=data.get("score"),
    )


def _decode(op: Op, result: Any) -> Result:
    if isinstance(op, GetOp):
        return None if result is None else _item(result)
    if isinstance(op, SearchOp):
        return [_search_item(data) for data in result]
    if isinstance(op, ListNamespacesOp):
        return [tuple(path) for path in result]
    return None


class GatewayStore(OnBackend, BaseStore):
    """Namespaced JSON documents: ``put``, ``get``, ``delete``, ``search`` by namespace
    prefix with ``filter``/``limit``/``offset``, ``list_namespaces``; with an ``index``,
    semantic search too.

    ``connect(base_url, ..., index=...)`` through a gateway, or
    ``from_store(store, ..., index=...)`` in process. A batch runs in one transaction.

    ``index`` is LangGraph's ``IndexConfig``: ``dims``, ``fields`` (JSON paths, default
    ``["$"]``: the whole value) and ``embed``: a LangChain ``Embeddings``, a function or an
    async function of ``list[str]`` to vectors, or, through a gateway, the name of one of
    its embeddings models (embedded by its ``/v1/embeddings``, routed and metered). A put
    embeds its fields (``index=False`` none, a list of paths those) and keeps the vectors
    with the item; ``search(prefix, query=...)`` embeds the query as a query and lists the
    items by cosine similarity (``score``, 0 to 1), highest first, after ``filter``; the
    items without vectors follow, with ``score=None``. Without an ``index`` a query is
    ignored, as LangGraph's ``InMemoryStore`` ignores it.
    """

    def __init__(self, backend: Backend, index: StoreIndex | None = None) -> None:
        super().__init__(backend)
        self._index = index

    @classmethod
    def connect(
        cls,
        base_url: str,
        *,
        api_key: str | None = None,
        namespace: str = "",
        index: IndexConfig | None = None,
    ) -> Self:
        """Through the gateway at ``base_url`` (its root, e.g. ``http://127.0.0.1:8080``)."""
        made = None
        if index is not None:

            def model(name: str) -> GatewayEmbeddings:
                return GatewayEmbeddings(base_url, name, api_key=api_key)

            made = StoreIndex(index, model)
        return cls(Backend.remote(base_url, api_key, namespace), made)

    @classmethod
    def from_store(
        cls,
        store: SessionStore,
        *,
        project: str = "default",
        namespace: str = "",
        index: IndexConfig | None = None,
    ) -> Self:
        """In process, on ``store`` (memory, SQLite or PostgreSQL), in ``project``."""
        made = None if index is None else StoreIndex(index, None)
        return cls(Backend.local(store, project, namespace), made)

    @property
    def index_config(self) -> IndexConfig | None:
        return None if self._index is None else self._index.config

    def _encoded(self, ops: list[Op], vectors: Vectors) -> list[dict[str, Any]]:
        indexed = self._index is not None
        return [_encode(n, op, vectors, indexed) for n, op in enumerate(ops)]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        if not listed:
            return []
        vectors = NO_VECTORS if self._index is None else self._index.embed(listed)
        encoded = self._encoded(listed, vectors)
        results = self._backend.call_sync("langgraph.store", ops=encoded)
        return [_decode(op, result) for op, result in zip(listed, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        if not listed:
            return []
        vectors = NO_VECTORS if self._index is None else await self._index.aembed(listed)
        encoded = self._encoded(listed, vectors)
        results = await self._backend.call("langgraph.store", ops=encoded)
        return [_decode(op, result) for op, result in zip(listed, results, strict=True)]

    async def aclose(self) -> None:
        """Close a remote adapter's connections, and its embeddings' through a gateway."""
        if self._index is not None and isinstance(self._index.embeddings, GatewayEmbeddings):
            await self._index.embeddings.aclose()
        await super().aclose()
