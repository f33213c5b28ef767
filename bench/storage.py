"""Storage benchmark: chain resolve time and bytes stored per turn, by chain depth.

    python -m bench.storage [--depths 10,100,1000,10000] [--repeat 5]

Each turn carries one user message and one assistant message of fixed size, so bytes
per turn must stay flat as depth grows (each row stores only its own turn).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from session import (
    MemoryStore,
    RequestSnapshot,
    ResponseSnapshot,
    SessionStore,
    SQLiteStore,
    StoredResponse,
)

TEXT = "lorem ipsum dolor sit amet " * 8  # ~216 characters per message


def make_turn(n: int, parent: str | None) -> StoredResponse:
    return StoredResponse(
        id=f"resp_{n:08d}",
        previous_response_id=parent,
        request=RequestSnapshot.model_validate(
            {"model": "bench", "input": f"question {n}: {TEXT}"}
        ),
        response=ResponseSnapshot(
            output=[
                {
                    "id": f"msg_{n:08d}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
                }
            ],
        ),
    )


async def seed(path: Path, depth: int, prefix: str) -> str:
    """Write a ``depth``-turn chain straight into a gateway's SQLite file; return its tip."""
    store = SQLiteStore(path, max_depth=depth + 10)
    parent = None
    for n in range(depth):
        record = make_turn(n, parent).model_copy(update={"id": f"resp_{prefix}_{n:06d}"})
        await store.save(record)
        parent = record.id
    await store.close()
    assert parent is not None
    return parent


def seeded_messages(depth: int) -> list[dict[str, str]]:
    """The chat messages a gateway sends when continuing a chain written by :func:`seed`."""
    messages = []
    for n in range(depth):
        messages += [
            {"role": "user", "content": f"question {n}: {TEXT}"},
            {"role": "assistant", "content": TEXT},
        ]
    return [*messages, {"role": "user", "content": "hello there"}]


ROW_BYTES = (
    "SELECT sum(length(request::text) + length(response::text) + length(metadata::text)"
    " + length(id) + coalesce(length(previous_response_id), 0)) FROM responses"
)


async def stored_bytes(store: SessionStore, dsn: str | None) -> int | None:
    """Bytes of JSON and ids the turns occupy (the same measure on every database)."""
    if isinstance(store, SQLiteStore):
        row = store.connection.execute(ROW_BYTES.replace("::text", "")).fetchone()
        return int(row[0])
    if dsn and not isinstance(store, MemoryStore):
        import psycopg

        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            cursor = await conn.execute(ROW_BYTES)
            found = await cursor.fetchone()
            return int(found[0]) if found else None
    return None


@contextmanager
def throwaway_schema(dsn: str) -> Iterator[str]:
    """A DSN whose tables live in a fresh schema, dropped with everything in it after."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"throwaway_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield make_conninfo(dsn, options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def measure(
    store: SessionStore, depth: int, repeat: int, dsn: str | None
) -> tuple[float, float | None]:
    parent = None
    for n in range(depth):
        record = make_turn(n, parent)
        await store.save(record)
        parent = record.id
    assert parent is not None
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        chain = await store.resolve_chain("default", parent)
        timings.append(time.perf_counter() - start)
        assert len(chain.items) == 2 * depth
    stored = await stored_bytes(store, dsn)
    return statistics.median(timings), (stored / depth if stored is not None else None)


async def main(depths: list[int], repeat: int, dsn: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        backends = ["memory", "sqlite", *(["postgres"] if dsn else [])]
        print(
            f"warm ms: the median of {repeat} resolves of the chain's tip in the process that"
            " wrote the chain, so every turn comes from memory (the turn cache, or the memory"
            " store); of the database only its deletion generation is read. A cold resolve"
            " (a fresh process reading every turn) is not measured here."
        )
        print(f"{'backend':<8} {'depth':>6} {'warm ms':>11} {'ms/turn':>9} {'bytes/turn':>11}")
        for name in backends:
            base: float | None = None
            for depth in depths:
                if name == "postgres" and dsn:
                    from session.postgres import PostgresStore

                    with throwaway_schema(dsn) as schema_dsn:
                        store: SessionStore = PostgresStore(schema_dsn, max_depth=depth)
                        seconds, per_turn = await measure(store, depth, repeat, schema_dsn)
                        await store.close()
                else:
                    if name == "memory":
                        store = MemoryStore(max_depth=depth)
                    else:
                        store = SQLiteStore(Path(folder) / f"{depth}.db", max_depth=depth)
                    seconds, per_turn = await measure(store, depth, repeat, None)
                    await store.close()
                base = base or seconds / depth
                bytes_text = f"{per_turn:11.0f}" if per_turn is not None else f"{'-':>11}"
                print(
                    f"{name:<8} {depth:>6} {seconds * 1000:11.2f} "
                    f"{seconds * 1000 / depth:9.4f} {bytes_text}"
                    f"   (per-turn cost x{seconds / depth / base:.2f} of depth {depths[0]})"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="10,100,1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--postgres",
        metavar="DSN",
        help="also measure PostgreSQL, in throwaway schemas of this database",
    )
    args = parser.parse_args()
    anyio.run(main, [int(d) for d in args.depths.split(",")], args.repeat, args.postgres)
