"""A LangGraph store's ``index``: which fields of a put are embedded, and the vectors of
puts and of search queries, as the gateway's store receives them.

Fields are LangGraph's JSON paths, read with LangGraph's own ``get_text_at_path``; a field
that yields several texts (``tags[*]``) is one vector per text, named ``tags[*].0``,
``tags[*].1``... as ``InMemoryStore`` names them. Documents are embedded with
``embed_documents``, queries with ``embed_query``.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, PutOp, SearchOp
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

Field = tuple[str, str | list[str]]  # the path as written, and as LangGraph tokenizes it
Vectors = tuple[dict[int, list[dict[str, str]]], dict[str, str]]
"""The vectors of a batch's puts (``{"field", "vector"}`` by position) and of its queries
(by text), encoded."""


def encoded(vector: Sequence[float]) -> str:
    """A vector as it travels: little-endian float32 in base64."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _fields(paths: Sequence[str]) -> list[Field]:
    return [(path, path if path == "$" else tokenize_path(path)) for path in paths]


@dataclass(frozen=True)
class PutVectors:
    """What a batch's puts need embedded: each put's (field, text) pairs, by position."""

    texts: dict[int, list[tuple[str, str]]]

    @property
    def distinct(self) -> list[str]:
        return list(dict.fromkeys(text for pairs in self.texts.values() for _, text in pairs))

    def vectors(self, embedded: dict[str, str]) -> dict[int, list[dict[str, str]]]:
        return {
            n: [{"field": field, "vector": embedded[text]} for field, text in pairs]
            for n, pairs in self.texts.items()
        }


class StoreIndex:
    """An ``IndexConfig`` made ready: ``dims``, ``fields`` (default ``["$"]``: the whole
    value) and ``embed`` (an ``Embeddings``, a function, an async function, or, through
    ``model``, the name of one of the gateway's embeddings models)."""

    def __init__(self, config: IndexConfig, model: Callable[[str], Embeddings] | None) -> None:
        self.config = config
        embed: Any = config.get("embed")
        if isinstance(embed, str):
            if model is None:
                raise ValueError(
                    f"embed={embed!r} names a gateway's embeddings model: connect to the "
                    "gateway (GatewayStore.connect), or pass an Embeddings object or function."
                )
            self.embeddings: Embeddings = model(embed)
        else:
            self.embeddings = ensure_embeddings(embed)
        dims = config.get("dims")
        if not isinstance(dims, int) or dims < 1:
            raise ValueError("index needs dims: the length of the embeddings' vectors.")
        self.dims = dims
        self.fields = _fields(config.get("fields") or ["$"])

    def put_texts(self, ops: Sequence[Any]) -> PutVectors:
        """The texts of the puts among ``ops`` (the last put of an item: the one kept)."""
        last: dict[tuple[tuple[str, ...], str], int] = {}
        for n, op in enumerate(ops):
            if isinstance(op, PutOp):
                last[(op.namespace, op.key)] = n
        texts: dict[int, list[tuple[str, str]]] = {}
        for n in last.values():
            op = ops[n]
            if op.value is None:
                continue
            if op.index is False:
                fields: list[Field] = []
            elif op.index is None:
                fields = self.fields
            else:
                fields = _fields(op.index)
            texts[n] = [
                (name, text)
                for path, tokens in fields
                for name, text in self._named(path, get_text_at_path(op.value, tokens))
                if text
            ]
        return PutVectors(texts)

    @staticmethod
    def _named(path: str, texts: list[str]) -> list[tuple[str, str]]:
        if len(texts) == 1:
            return [(path, texts[0])]
        return [(f"{path}.{n}", text) for n, text in enumerate(texts)]

    @staticmethod
    def queries(ops: Sequence[Any]) -> list[str]:
        """The distinct query strings of the searches among ``ops``."""
        return list(dict.fromkeys(op.query for op in ops if isinstance(op, SearchOp) and op.query))

    def _checked(self, vectors: list[list[float]], count: int) -> list[str]:
        if len(vectors) != count:
            raise ValueError(f"The embeddings gave {len(vectors)} vectors for {count} texts.")
        for vector in vectors:
            if len(vector) != self.dims:
                raise ValueError(
                    f"The embeddings gave a vector of {len(vector)} dimensions; "
                    f"the index's dims is {self.dims}."
                )
        return [encoded(vector) for vector in vectors]

    def _vectors(
        self,
        puts: PutVectors,
        embedded: list[list[float]],
        queries: list[str],
        asked: list[list[float]],
    ) -> Vectors:
        documents = puts.distinct
        by_text = dict(zip(documents, self._checked(embedded, len(documents)), strict=True))
        return puts.vectors(by_text), dict(
            zip(queries, self._checked(asked, len(queries)), strict=True)
        )

    def embed(self, ops: Sequence[Any]) -> Vectors:
        """The vectors of ``ops``' puts (by position) and of their queries (by text)."""
        puts, queries = self.put_texts(ops), self.queries(ops)
        documents = puts.distinct
        embedded = self.embeddings.embed_documents(documents) if documents else []
        asked = [self.embeddings.embed_query(query) for query in queries]
        return self._vectors(puts, embedded, queries, asked)

    async def aembed(self, ops: Sequence[Any]) -> Vectors:
        """:meth:`embed` with the embeddings' async methods, the queries at once."""
        puts, queries = self.put_texts(ops), self.queries(ops)
        documents = puts.distinct
        embedded = await self.embeddings.aembed_documents(documents) if documents else []
        asked = list(await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries)))
        return self._vectors(puts, embedded, queries, asked)
