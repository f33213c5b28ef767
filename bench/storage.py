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
from collections.abc import Callable
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
        request=RequestSnapshot(model="bench", input=f"question {n}: {TEXT}"),
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


async def drop_postgres_tables(dsn: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("DROP TABLE IF EXISTS responses, schema_version")


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
        backends: dict[str, Callable[[int], SessionStore]] = {
            "memory": lambda depth: MemoryStore(max_depth=depth),
            "sqlite": lambda depth: SQLiteStore(Path(folder) / f"{depth}.db", max_depth=depth),
        }
        if dsn:
            from session.postgres import PostgresStore

            backends["postgres"] = lambda depth: PostgresStore(dsn, max_depth=depth)
        print(f"{'backend':<8} {'depth':>6} {'resolve ms':>11} {'ms/turn':>9} {'bytes/turn':>11}")
        for name, open_store in backends.items():
            base: float | None = None
            for depth in depths:
                store = open_store(depth)
                seconds, per_turn = await measure(store, depth, repeat, dsn)
                await store.close()
                if name == "postgres":
                    await drop_postgres_tables(dsn or "")
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
        help="also measure PostgreSQL, in this (empty) database; its tables are dropped after",
    )
    args = parser.parse_args()
    anyio.run(main, [int(d) for d in args.depths.split(",")], args.repeat, args.postgres)
