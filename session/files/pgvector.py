"""The vector index of the PostgreSQL store, where the server has pgvector: each chunk's
embedding in a ``vector`` column, and an HNSW index (cosine) for each length of vector
the store holds, made by the first file that brings that length.

An index covers every store's chunks; a search's own conditions (its stores, project and
filter) run in the same query, and pgvector's iterative scan goes on through the index
until enough chunks pass them. Vectors longer than ``VECTOR_MAX`` dimensions are indexed
as half-precision (``halfvec``, to ``HALFVEC_MAX``); longer ones are compared exactly, in
the database.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sql.dialect import POSTGRES
from ..sql.statement import Returning, rows, run
from .models import SearchQuery
from .sql_search import searched

VECTOR_MAX = 2000  # the longest vector pgvector's HNSW indexes
HALFVEC_MAX = 4000  # the longest half-precision one
EF_SEARCH = 100  # the index's candidate list, at least; a search's depth when deeper
INDEX_LOCK = 0x7645_C701  # serialises instances making the same index


def literal(vector: bytes) -> str:
    """A float32 vector as pgvector's text input (each value exact to float32)."""
    return "[" + ",".join(map(repr, np.frombuffer(vector, dtype="<f4").tolist())) + "]"


@dataclass(frozen=True)
class Pgvector:
    """pgvector, installed in ``schema`` of the store's database."""

    schema: str

    def name(self, thing: str) -> str:
        """A name of the extension's (type, operator class, function), schema-qualified."""
        return f'"{self.schema}".{thing}'

    def indexed(self, dimensions: int) -> str | None:
        """The expression an index of vectors of ``dimensions`` holds, over ``c``'s
        ``embedding`` (``None``: too long for an index)."""
        if dimensions <= VECTOR_MAX:
            return f"embedding::{self.name('vector')}({dimensions})"
        if dimensions <= HALFVEC_MAX:
            return f"embedding::{self.name('halfvec')}({dimensions})"
        return None

    def ensure_index(self, dimensions: int) -> Returning[None]:
        """The HNSW index of vectors of ``dimensions``, made if the store has none yet."""
        expression = self.indexed(dimensions)
        if expression is None:
            return
        index = f"chunks_embedding_{dimensions}"
        found = yield rows(
            "SELECT 1 FROM pg_class WHERE relname = :index"
            " AND relnamespace = current_schema()::regnamespace",
            index=index,
        )
        if found:
            return
        yield rows("SELECT pg_advisory_xact_lock(:lock)", lock=INDEX_LOCK)
        ops = "halfvec_cosine_ops" if dimensions > VECTOR_MAX else "vector_cosine_ops"
        yield run(
            f"CREATE INDEX IF NOT EXISTS {index} ON chunks USING hnsw"
            f" (({expression}) {self.name(ops)})"
            f" WHERE {self.name('vector_dims')}(embedding) = {dimensions}"
        )

    def nearest(
        self, project: str, store_ids: list[str], query: SearchQuery, depth: int
    ) -> Returning[list[tuple[int, float]]]:
        """The ids of the ``depth`` chunks nearest the query's vector, best first, with
        their cosine, through the index of vectors of the query's length."""
        dimensions = len(query.vector) // 4
        where, params = searched(POSTGRES, project, store_ids, query)
        expression = self.indexed(dimensions) or "embedding"
        cast = expression.replace("embedding::", "", 1) if expression != "embedding" else None
        wanted = f"(:wanted)::{cast or self.name('vector')}"
        distance = f"(c.{expression}) OPERATOR({self.name('<=>')}) {wanted}"
        yield rows(
            "SELECT set_config('hnsw.ef_search', :ef, true),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
            ef=str(min(1000, max(EF_SEARCH, depth))),
        )
        found = yield rows(
            "WITH found AS MATERIALIZED ("
            f" SELECT c.id, {distance} AS distance FROM chunks c{where}"
            f" AND {self.name('vector_dims')}(c.embedding) = :dimensions"
            " ORDER BY distance LIMIT :depth)"
            " SELECT id, 1 - distance FROM found ORDER BY distance, id",
            wanted=literal(query.vector),
            dimensions=dimensions,
            depth=depth,
            **params,
        )
        return [(int(row[0]), float(row[1])) for row in found]


NO_PGVECTOR = (
    "the PostgreSQL server has no pgvector, so vector store search compares every vector "
    "exactly, in the gateway; install pgvector on the server (the store adds its index at "
    "the next start) for an HNSW index"
)
NOT_CREATED = (
    "the PostgreSQL server has pgvector but this database lacks the extension and the "
    "gateway's user may not create it, so vector store search compares every vector "
    "exactly, in the gateway; a superuser runs CREATE EXTENSION vector, then the gateway "
    "restarts"
)


def found_index() -> Returning[tuple[Pgvector | None, str | None]]:
    """The store's pgvector (where ``chunks`` has its column), else why it has none."""
    found = yield rows(
        "SELECT n.nspname FROM pg_attribute c JOIN pg_type t ON t.oid = c.atttypid"
        " JOIN pg_namespace n ON n.oid = t.typnamespace"
        " WHERE c.attrelid = 'chunks'::regclass AND c.attname = 'embedding'"
        " AND NOT c.attisdropped AND t.typname = 'vector'"
    )
    if found:
        return Pgvector(str(found[0][0])), None
    available = yield rows("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    return None, NOT_CREATED if available else NO_PGVECTOR


BACKFILL_BATCH = 500


def backfill(index: Pgvector) -> Returning[int]:
    """Move up to ``BACKFILL_BATCH`` chunks kept before the store had pgvector into its
    column (and their lengths' indexes); how many it moved."""
    found = yield rows(
        "SELECT id, vector FROM chunks WHERE embedding IS NULL AND length(vector) > 0"
        " ORDER BY id LIMIT :batch",
        batch=BACKFILL_BATCH,
    )
    for chunk_id, vector in found:
        yield run(
            f"UPDATE chunks SET embedding = (:embedding)::{index.name('vector')}, vector = ''"
            " WHERE id = :id",
            embedding=literal(bytes(vector)),
            id=chunk_id,
        )
    for dimensions in sorted({len(bytes(row[1])) // 4 for row in found}):
        yield from index.ensure_index(dimensions)
    return len(found)
