"""The Claude Agent SDK's SessionStore: its own conformance suite, in process on every backend
and through a gateway process, and the contract details the suite leaves out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from claude_agent_sdk import SessionKey, fold_session_summary
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionStore

from session.adapters.claude import ClaudeSessionStore
from session.agent_store import StoreError

from .adapter_targets import Target

pytestmark = [pytest.mark.anyio, pytest.mark.contract]

KEY: SessionKey = {"project_key": "proj", "session_id": "s1"}


def test_every_optional_method_is_implemented() -> None:
    for method in ("list_sessions", "list_session_summaries", "delete", "list_subkeys"):
        assert getattr(ClaudeSessionStore, method) is not getattr(SessionStore, method)


async def test_conformance(target: Target) -> None:
    await run_session_store_conformance(lambda: target.adapter(ClaudeSessionStore))


async def test_entries_round_trip_exactly_and_retries_are_stored_once(target: Target) -> None:
    store = target.adapter(ClaudeSessionStore)
    odd: dict[str, Any] = {
        "type": "user",
        "uuid": "u1",
        "message": {"content": [{"type": "text", "text": 'héllo ☃ \U0001f600 \\ " \n'}]},
        "n": [1, 2.5, -0.0, 1e300, None, True, {"": {}}],
    }
    batch = [odd, {"type": "assistant", "uuid": "u2"}, {"type": "title", "customTitle": "t"}]
    await store.append(KEY, batch)
    await store.append(KEY, batch[:2])  # a retried batch: uuids already stored
    await store.append(KEY, [{"type": "title", "customTitle": "t"}])  # no uuid: appended again
    loaded = await store.load(KEY)
    assert loaded == [*batch, {"type": "title", "customTitle": "t"}]
    assert repr(loaded[0]) == repr(odd)


async def test_a_whole_transcript_appends_in_one_call(target: Target) -> None:
    store = target.adapter(ClaudeSessionStore)
    entries: list[Any] = [{"type": "x", "uuid": f"u{n}", "n": n} for n in range(2500)]
    await store.append(KEY, entries)
    await store.append(KEY, entries)  # retried whole: nothing doubles
    assert await store.load(KEY) == entries


async def test_subpaths_that_escape_are_refused(target: Target) -> None:
    store = target.adapter(ClaudeSessionStore)
    for subpath in ("../x", "subagents/../../x", "/etc/passwd", "a/./b", ".", "a//b", "C:/x"):
        with pytest.raises(StoreError) as refused:
            await store.append({**KEY, "subpath": subpath}, [{"type": "x"}])
        assert refused.value.code == "BadRequest"
    assert await store.list_subkeys(KEY) == []


async def test_namespaces_never_see_each_other(target: Target) -> None:
    first, second = target.adapter(ClaudeSessionStore), target.adapter(ClaudeSessionStore)
    await first.append(KEY, [{"type": "x", "uuid": "a"}])
    assert await second.load(KEY) is None
    assert await second.list_sessions("proj") == []
    assert await second.list_session_summaries("proj") == []
    await second.delete(KEY)
    assert await first.load(KEY) == [{"type": "x", "uuid": "a"}]


async def test_concurrent_writers_to_one_session_are_serialised(target: Target) -> None:
    namespace = "shared-" + target.name
    writers = [target.adapter(ClaudeSessionStore, namespace=namespace) for _ in range(4)]

    async def write(n: int, store: ClaudeSessionStore) -> None:
        for i in range(10):
            entry: Any = {"type": "x", "uuid": f"{n}-{i}", "customTitle": f"{n}"}
            await store.append(KEY, [entry])

    await asyncio.gather(*(write(n, store) for n, store in enumerate(writers)))
    loaded = await writers[0].load(KEY)
    assert loaded is not None and len(loaded) == 40
    for n in range(4):  # each writer's entries keep their order
        assert [e["uuid"] for e in loaded if e["uuid"].startswith(f"{n}-")] == [
            f"{n}-{i}" for i in range(10)
        ]
    (summary,) = await writers[0].list_session_summaries("proj")
    (listed,) = await writers[0].list_sessions("proj")
    # The stored summary is the fold of the whole transcript, in its order.
    assert summary["data"] == fold_session_summary(None, KEY, loaded)["data"]
    assert summary["data"]["custom_title"] == loaded[-1]["customTitle"]
    assert summary["mtime"] >= listed["mtime"] > 1e12


async def test_mtime_grows_with_every_append(target: Target) -> None:
    store = target.adapter(ClaudeSessionStore)
    seen = []
    for n in range(3):
        await store.append(KEY, [{"type": "x", "n": n}])
        seen.append((await store.list_sessions("proj"))[0]["mtime"])
    assert seen == sorted(set(seen))


@pytest.mark.system
async def test_a_gateway_wants_its_key(gateway_sqlite: str) -> None:
    store = ClaudeSessionStore.connect(gateway_sqlite)
    with pytest.raises(StoreError) as refused:
        await store.load(KEY)
    assert refused.value.status == 401
    await store.close()
