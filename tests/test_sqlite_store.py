"""What only the SQLite backend promises: one-query chains, durability, several processes."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import re
import sqlite3
from pathlib import Path

import anyio
import pytest

from session import ChainAncestorMissing, ChainCycle, ChainTooDeep, Conversation, SQLiteStore
from session.sqlite.schema import MIGRATIONS, migrate

from .records import turn

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.mark.parametrize("readers", [1, 8])
async def test_a_chain_is_read_with_one_statement_however_many_ask(
    tmp_path: Path, readers: int
) -> None:
    """Branches fanned out from a chain not in memory wait for one read of it."""
    writer = SQLiteStore(tmp_path / "s.db")
    parent = None
    for n in range(50):
        await writer.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    await writer.close()
    store = SQLiteStore(tmp_path / "s.db")  # nothing cached yet
    statements: list[str] = []
    store.read_connection.set_trace_callback(statements.append)
    chains = await asyncio.gather(*(store.resolve_chain("default", "r49") for _ in range(readers)))
    store.read_connection.set_trace_callback(None)
    assert [len(chain.turns) for chain in chains] == [50] * readers
    assert len(statements) == 1, statements
    await store.close()


async def test_a_walk_outlives_a_caller_gone_and_stops_with_the_last(tmp_path: Path) -> None:
    writer = SQLiteStore(tmp_path / "s.db")
    await writer.save(turn("r0"))
    await writer.save(turn("r1", "r0"))
    await writer.close()
    store = SQLiteStore(tmp_path / "s.db")  # nothing cached yet
    first = asyncio.create_task(store.resolve_chain("default", "r1"))
    second = asyncio.create_task(store.resolve_chain("default", "r1"))
    await asyncio.sleep(0)  # both wait for one walk
    first.cancel()
    assert len((await second).turns) == 2  # the walk went on for the one still waiting
    with pytest.raises(asyncio.CancelledError):
        await first
    await store.close()

    store = SQLiteStore(tmp_path / "s.db")
    alone = asyncio.create_task(store.resolve_chain("default", "r1"))
    await asyncio.sleep(0)
    alone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await alone
    for _ in range(3):
        await asyncio.sleep(0)
    assert store._cache.walks == {}  # stopped and forgotten with its last caller
    await store.close()


async def test_data_survives_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "folder" / "s.db"
    first = SQLiteStore(path)
    await first.save(turn("r0"))
    await first.save(turn("r1", "r0"))
    await first.close()
    second = SQLiteStore(path)
    assert [t.id for t in (await second.resolve_chain("default", "r1")).turns] == ["r0", "r1"]
    assert second.schema_version == len(MIGRATIONS)
    await second.close()


async def test_a_version_1_file_is_migrated_keeping_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, up_to=1)
    conn.close()
    store = SQLiteStore(path)  # the file predates conversations
    await store.save(turn("r0"))
    assert store.schema_version == len(MIGRATIONS)
    assert (await store.get("default", "r0")).id == "r0"
    assert await store.create_conversation(Conversation(id="c"), []) == []
    await store.close()


async def test_agent_conversations_kept_before_migration_13_show_their_stored_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, up_to=12)
    for name in ("b", "a"):  # kept with finer times than they show, "a" the later one
        fine = 1_700_000_000.1234 if name == "b" else 1_700_000_000.1236
        conn.execute(
            "INSERT INTO agent_conversations VALUES ('default', ?, '{}', ?, ?, 1)",
            (name, fine, fine),
        )
    conn.close()
    store = SQLiteStore(path)
    page = await store.agent().list_conversations()
    assert [c.conversation_id for c in page.items] == ["b", "a"]  # one millisecond: by id
    assert {c.updated_at for c in page.items} == {1_700_000_000.123}
    await store.close()


async def test_a_hand_written_cycle_is_reported_not_looped(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    for name, parent in (("a", None), ("b", "a"), ("c", "b")):
        await store.save(turn(name, parent))
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE responses SET previous_response_id = 'c' WHERE id = 'a'")
    store = SQLiteStore(path)  # a corruption found on reading, not through the cache
    with pytest.raises(ChainCycle) as caught:
        await store.resolve_chain("default", "c")
    assert caught.value.code == "chain_cycle"
    await store.close()


async def test_rows_hold_only_their_own_turn(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    parent = None
    for n in range(20):
        await store.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    with sqlite3.connect(tmp_path / "s.db") as conn:
        sizes = [
            len(r) + len(s) for r, s in conn.execute("SELECT request, response FROM responses")
        ]
        inputs = [
            len(json.loads(r)["input"]) for (r,) in conn.execute("SELECT request FROM responses")
        ]
    assert max(sizes) - min(sizes) < 16  # ids grow from r0 to r19, nothing else does
    assert set(inputs) == {1}
    await store.close()


def _append_chain(path: str, prefix: str, count: int) -> None:
    async def main() -> None:
        store = SQLiteStore(path)
        parent = None
        for n in range(count):
            await store.save(turn(f"{prefix}{n}", parent))
            parent = f"{prefix}{n}"
        await store.close()

    anyio.run(main)


@pytest.mark.system
async def test_two_processes_appending_to_one_file_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_chain, args=(path, prefix, 200)) for prefix in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    store = SQLiteStore(path)
    for prefix in ("a", "b"):
        chain = await store.resolve_chain("default", f"{prefix}199")
        assert [t.id for t in chain.turns] == [f"{prefix}{n}" for n in range(200)]
    await store.close()


async def test_cached_turns_are_not_read_again_but_deletions_elsewhere_are_seen(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    parent = None
    for n in range(20):
        await store.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    statements: list[str] = []
    store.read_connection.set_trace_callback(statements.append)
    assert len((await store.resolve_chain("default", "r19")).turns) == 20
    assert statements == []  # every turn came from the cache
    other = sqlite3.connect(tmp_path / "s.db")  # another process deletes an ancestor
    other.execute("DELETE FROM responses WHERE id = 'r7'")
    other.commit()
    other.close()
    with pytest.raises(ChainAncestorMissing) as missing:
        await store.resolve_chain("default", "r19")
    assert missing.value.response_id == "r7"
    await store.close()


async def test_a_cached_chain_is_checked_by_one_number_until_something_is_deleted(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    parent = None
    for n in range(30):
        await store.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    await store.save(turn("other"))
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    for _ in range(3):
        assert len((await store.resolve_chain("default", "r29")).turns) == 30
    assert statements == ["SELECT generation FROM deletions"] * 3
    await store.delete("default", "other")  # unrelated: the chain's turns are checked once
    statements.clear()
    for _ in range(2):
        assert len((await store.resolve_chain("default", "r29")).turns) == 30
    lookups = [s for s in statements if s.startswith("SELECT id FROM responses")]
    assert len(lookups) == 1, statements
    await store.close()


async def test_a_chain_longer_than_the_cache_keeps_its_newest_turns(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", cache_turns=40)
    parent = None
    for n in range(50):
        await store.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    statements: list[str] = []
    store.read_connection.set_trace_callback(statements.append)
    for head in ("r49", "r48", "r47"):
        chain = await store.resolve_chain("default", head)
        assert [t.id for t in chain.turns] == [f"r{i}" for i in range(int(head[1:]) + 1)]
    # Each walk read only the oldest turns the cache could not hold, never the tip's.
    starts = [re.search(r"AND id = '(r\d+)'", statement) for statement in statements]
    assert [start.group(1) if start else None for start in starts] == ["r9", "r9", "r8"]
    await store.close()


async def test_a_chain_names_the_item_types_it_holds_kept_or_walked(tmp_path: Path) -> None:
    """Types let a caller skip a scan of a long chain for an item type it does not hold."""
    store = SQLiteStore(tmp_path / "s.db")
    await store.save(turn("r0"))
    sealed = {"id": "cmp_1", "type": "compaction", "encrypted_content": "x"}
    with_compaction = turn("r1", "r0")
    with_compaction.response.output.append(sealed)
    await store.save(with_compaction)
    await store.save(turn("r2", "r1"))
    assert (await store.resolve_chain("default", "r0")).types == {"message"}
    for head in ("r1", "r2"):  # each the kept chain of its parent plus one turn
        assert (await store.resolve_chain("default", head)).types == {"message", "compaction"}
    await store.close()
    reopened = SQLiteStore(tmp_path / "s.db")  # walked from the file
    assert (await reopened.resolve_chain("default", "r2")).types == {"message", "compaction"}
    await reopened.close()


async def test_a_kept_chain_is_extended_by_its_next_turn_and_dropped_by_a_deletion(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "s.db", max_depth=31)
    parent = None
    for n in range(30):
        await store.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    assert len((await store.resolve_chain("default", "r29")).turns) == 30
    await store.save(turn("r30", "r29"))
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    store.read_connection.set_trace_callback(statements.append)
    chain = await store.resolve_chain("default", "r30")  # the kept r29 chain, plus one
    assert [t.id for t in chain.turns] == [f"r{n}" for n in range(31)]
    assert chain.items[-2:] == [*chain.turns[-1].input, *chain.turns[-1].output]
    assert statements == ["SELECT generation FROM deletions"]
    await store.save(turn("r31", "r30"))
    with pytest.raises(ChainTooDeep):
        await store.resolve_chain("default", "r31")
    other = sqlite3.connect(tmp_path / "s.db")  # another process deletes an ancestor
    other.execute("DELETE FROM responses WHERE id = 'r3'")
    other.commit()
    other.close()
    for head in ("r29", "r30"):
        with pytest.raises(ChainAncestorMissing, match="'r3'"):
            await store.resolve_chain("default", head)
    await store.close()
