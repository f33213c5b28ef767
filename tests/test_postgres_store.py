"""What only the PostgreSQL backend promises: shared use, racing migrations, outages."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from gateway import create_app
from session import ChainAncestorMissing, ChainCycle, StoreUnavailable
from session.postgres import PostgresStore
from session.postgres.schema import MIGRATIONS

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .records import turn
from .servers import serve
from .tcp_proxy import TcpProxy, proxied_postgres

pytestmark = [pytest.mark.contract]


@pytest.mark.anyio
async def test_instances_migrating_at_once_migrate_once(postgres_dsn: str) -> None:
    stores = [PostgresStore(postgres_dsn) for _ in range(4)]
    await asyncio.gather(*(s.save(turn(f"r{n}")) for n, s in enumerate(stores)))
    assert {s.schema_version for s in stores} == {len(MIGRATIONS)}
    for store in stores:
        await store.close()


@pytest.mark.anyio
async def test_two_instances_saving_children_of_one_parent_lose_nothing(postgres_dsn: str) -> None:
    one, two = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    await one.save(turn("root"))
    children = [turn(f"c{n}", "root") for n in range(40)]
    await asyncio.gather(*((one if n % 2 else two).save(c) for n, c in enumerate(children)))
    for child in children:
        chain = await two.resolve_chain("default", child.id)
        assert [t.id for t in chain.turns] == ["root", child.id]
    await one.close()
    await two.close()


@pytest.mark.anyio
async def test_a_hand_written_cycle_is_reported(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    for name, parent in (("a", None), ("b", "a"), ("c", "b")):
        await store.save(turn(name, parent))
    await store.close()
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        await conn.execute("UPDATE responses SET previous_response_id = 'c' WHERE id = 'a'")
    store = PostgresStore(postgres_dsn)  # a corruption found on reading, not through the cache
    with pytest.raises(ChainCycle):
        await store.resolve_chain("default", "c")
    await store.close()


@pytest.mark.anyio
async def test_a_database_outage_is_unavailable_then_recovers(postgres_dsn: str) -> None:
    with proxied_postgres(postgres_dsn) as (proxy, dsn):
        await _outage_and_recovery(proxy, PostgresStore(dsn, connect_timeout=1))


async def _outage_and_recovery(proxy: TcpProxy, store: PostgresStore) -> None:
    try:
        await store.save(turn("r0"))
        proxy.stop()
        with pytest.raises(StoreUnavailable) as caught:
            await store.get("default", "r0")
        assert caught.value.code == "store_unavailable"
        proxy.start()
        for _ in range(50):  # the pool reconnects in the background: bounded retries
            try:
                assert (await store.get("default", "r0")).id == "r0"
                break
            except StoreUnavailable:
                await asyncio.sleep(0.2)
        else:
            raise AssertionError("the store did not recover")
        await store.save(turn("r1", "r0"))
    finally:
        await store.close()


@pytest.mark.api
def test_the_gateway_answers_503_while_the_database_is_down(
    postgres_dsn: str, tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    body = {"model": "echo", "input": "hello"}
    with proxied_postgres(postgres_dsn) as (proxy, dsn):
        session = {"backend": "postgres", "postgres": {"dsn": dsn, "connect_timeout_seconds": 1}}
        config = gateway_config(fake_upstream[1], tmp_path / "unused.db", session=session)
        with serve(create_app(config)) as url:
            first = httpx.post(f"{url}/v1/responses", json=body, timeout=30).json()
            proxy.stop()
            down = httpx.post(
                f"{url}/v1/responses",
                json={**body, "previous_response_id": first["id"]},
                timeout=30,
            )
            assert down.status_code == 503
            assert down.json()["error"]["code"] == "store_unavailable"
            assert httpx.get(f"{url}/healthz").status_code == 200
            proxy.start()
            for _ in range(50):  # bounded wait for the pool to reconnect
                again = httpx.get(f"{url}/v1/responses/{first['id']}", timeout=30)
                if again.status_code == 200:
                    break
                time.sleep(0.2)
            assert again.status_code == 200


@pytest.mark.anyio
async def test_a_turn_deleted_by_another_instance_breaks_cached_chains(postgres_dsn: str) -> None:
    first, second = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    parent = None
    for n in range(5):
        await first.save(turn(f"r{n}", parent))
        parent = f"r{n}"
    assert len((await first.resolve_chain("default", "r4")).turns) == 5  # all from its cache
    await second.delete("default", "r2")
    with pytest.raises(ChainAncestorMissing) as missing:
        await first.resolve_chain("default", "r4")
    assert missing.value.response_id == "r2"
    await first.close()
    await second.close()
