"""LangGraph: the checkpointer against langgraph-checkpoint-conformance, the store side by side
with LangGraph's InMemoryStore (its semantic search: ``test_adapter_langgraph_search.py``),
and a graph that resumes in a second process after ``interrupt()``; in process on every
backend and through a gateway process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.store.base import BaseStore, Item
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from session import SQLiteStore
from session.adapters.langgraph import GatewayCheckpointer, GatewayStore

from .adapter_targets import API_KEY, Target
from .langgraph_resume import build
from .servers import REPO

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


async def test_checkpointer_conformance(target: Target) -> None:
    @checkpointer_test(name=f"GatewayCheckpointer ({target.name})")
    async def factory() -> AsyncIterator[GatewayCheckpointer]:
        yield target.adapter(GatewayCheckpointer)

    report = await validate(factory)
    assert {name for name, result in report.results.items() if result.detected} == {
        capability.value for capability in ALL_CAPABILITIES
    }
    failures = {name: result.failures for name, result in report.results.items()}
    assert all(result.passed for result in report.results.values()), failures


def _plain(result: Any) -> Any:
    """Results without their timestamps, which two stores cannot share."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [_plain(part) for part in result]
    return result


async def test_store_matches_langgraphs_in_memory_store(target: Target) -> None:
    ours: BaseStore = target.adapter(GatewayStore)
    reference = InMemoryStore()
    puts: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
        (("users", "u1", "memories"), "m1", {"text": "likes tea", "score": 3, "tags": ["a"]}),
        (("users", "u1", "memories"), "m2", {"text": "lives in Oslo", "score": 7}),
        (("users", "u1", "prefs"), "p1", {"theme": "dark", "nested": {"size": 2}}),
        (("users", "u2", "memories"), "m1", {"text": "likes coffee", "score": 5}),
        (("teams", "t1"), "k", {"members": 4}),
        (("users", "u1", "memories"), "m2", {"text": "moved to Bergen", "score": 9}),
    ]
    reads: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("get", (("users", "u1", "memories"), "m2"), {}),
        ("get", (("users", "u1", "memories"), "missing"), {}),
        ("search", (("users",),), {"limit": 10}),
        ("search", (("users", "u1", "memories"),), {"filter": {"score": {"$gte": 5}}}),
        ("search", (("users", "u2"),), {"filter": {"score": {"$lt": 6, "$gt": 4}}}),
        ("search", (("users",),), {"filter": {"nested": {"size": 2}}}),
        ("search", (("users",),), {"filter": {"tags": ["a"]}, "limit": 5}),
        ("search", (("users",),), {"limit": 2, "offset": 1}),
        ("search", ((),), {"filter": {"score": {"$ne": 3}}}),
        ("search", (("user",),), {}),
        ("list_namespaces", (), {}),
        ("list_namespaces", (), {"prefix": ("users",), "max_depth": 2}),
        ("list_namespaces", (), {"suffix": ("memories",)}),
        ("list_namespaces", (), {"prefix": ("users", "*", "prefs")}),
        ("list_namespaces", (), {"limit": 2, "offset": 1}),
    ]
    for store in (ours, reference):
        for namespace, key, value in puts:
            await store.aput(namespace, key, value)
    for name, args, options in reads:
        mine = await getattr(ours, f"a{name}")(*args, **options)
        theirs = await getattr(reference, f"a{name}")(*args, **options)
        assert _plain(mine) == _plain(theirs), (name, args, options)
    for store in (ours, reference):
        await store.adelete(("users", "u1", "memories"), "m1")
    assert _plain(await ours.asearch(("users",))) == _plain(await reference.asearch(("users",)))
    # Where InMemoryStore raises TypeError (an item without the compared field), ours skips it.
    assert _plain(await ours.asearch(("users", "u1"), filter={"score": {"$gte": 5}})) == [
        (("users", "u1", "memories"), "m2", {"text": "moved to Bergen", "score": 9})
    ]
    kept = await ours.aget(("users", "u1", "prefs"), "p1")
    assert kept is not None and kept.updated_at >= kept.created_at


async def test_checkpoints_are_apart_from_messages_and_go_with_their_thread(
    target: Target,
) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    saver: GatewayCheckpointer = target.adapter(GatewayCheckpointer)
    config: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    stored = await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    await saver.aput_writes(stored, [("channel", {"v": 1})], "task-1")
    agent = target.agent_store()  # its conversation of the same name is another thing
    await agent.append_message("t1", {"text": "hi"}, role="user")
    await agent.clear_messages("t1")
    found = await saver.aget_tuple({"configurable": {"thread_id": "t1"}})
    assert found is not None and found.pending_writes == [("task-1", "channel", {"v": 1})]
    await saver.adelete_thread("t1")
    assert await saver.aget_tuple({"configurable": {"thread_id": "t1"}}) is None
    assert [t async for t in saver.alist(None)] == []


def _run(url: str, namespace: str, thread: str, step: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.langgraph_resume", url, API_KEY, namespace, thread, step],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.system
def test_a_graph_resumes_after_interrupt_in_a_second_process(
    backend: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(f"gateway_{backend}")
    namespace, thread = uuid.uuid4().hex, "review-1"
    stopped = _run(url, namespace, thread, "start")
    assert stopped["next"] == ["review"]
    assert stopped["interrupts"] == [{"question": "Publish the draft?", "steps": ["drafted"]}]
    finished = _run(url, namespace, thread, "resume")
    assert finished["next"] == []
    assert finished["values"] == {
        "steps": ["drafted", "reviewed", "published (yes)"],
        "answer": "yes",
    }
    assert _run(url, uuid.uuid4().hex, thread, "start")["values"]["steps"] == ["drafted"]


def test_sync_methods_in_process(tmp_path: Path) -> None:
    """``graph.invoke`` calls the sync methods, from several worker threads at once."""
    store = SQLiteStore(tmp_path / "s.db")
    checkpointer = GatewayCheckpointer.from_store(store)
    graph = build(checkpointer)
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"steps": [], "answer": ""}, config)
    assert graph.get_state(config).next == ("review",)
    graph.invoke(Command(resume="ok"), config)
    assert graph.get_state(config).values["steps"][-1] == "published (ok)"
    assert len(list(graph.get_state_history(config))) >= 4

    async def close() -> None:
        await checkpointer.aclose()
        await store.close()

    asyncio.run(close())
