"""The agent Store's contract, on every session backend."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from gateway import create_app
from session import MemoryStore, SessionStore, SQLiteStore
from session.agent_store import NewMessage, RemoteAgentStore, StoreError
from session.postgres import PostgresStore

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve

pytestmark = [pytest.mark.anyio, pytest.mark.contract]

KEYS = {project: f"sk-agent-{project}-0123456789" for project in ("team", "a", "b")}
Agents = Callable[[str], Any]  # project -> an AgentStore or a RemoteAgentStore


@pytest.fixture(params=["memory", "sqlite", "postgres", "remote-sqlite", "remote-postgres"])
async def agents(request: Any, tmp_path: Path) -> AsyncIterator[Agents]:
    """The agent Store of a project: in process on each backend, or through gateways over
    HTTP (on PostgreSQL, two instances sharing the database, used in turn)."""
    backend = request.param.removeprefix("remote-")
    if not request.param.startswith("remote-"):
        store: SessionStore = (
            MemoryStore()
            if backend == "memory"
            else SQLiteStore(tmp_path / "a.db")
            if backend == "sqlite"
            else PostgresStore(request.getfixturevalue("postgres_dsn"))
        )
        yield store.agent
        await store.close()
        return
    session: dict[str, Any] = {"backend": backend, "sqlite": {"path": str(tmp_path / "a.db")}}
    if backend == "postgres":
        session["postgres"] = {"dsn": request.getfixturevalue("postgres_dsn")}
    keys = [{"key": key, "project": project} for project, key in KEYS.items()]
    fake: tuple[FakeUpstream, str] = request.getfixturevalue("fake_upstream")
    config = gateway_config(fake[1], tmp_path / "u.db", session=session,
                            auth={"mode": "keys", "keys": keys})  # fmt: skip
    clients: list[RemoteAgentStore] = []
    with ExitStack() as running:
        urls = [running.enter_context(serve(create_app(config))) for _ in range(2)]

        def connect(project: str) -> RemoteAgentStore:
            url = urls[len(clients) % 2 if backend == "postgres" else 0]
            clients.append(RemoteAgentStore.connect(url, api_key=KEYS[project]))
            return clients[-1]

        yield connect
        for client in clients:
            await client.close()


@pytest.fixture
def agent(agents: Agents) -> Any:
    return agents("team")


async def test_conversations_are_created_once_and_merged(agent: Any) -> None:
    created = await agent.create_conversation("c1", {"a": 1, "b": {"x": 1}})
    assert created.to_json()["messageCount"] == 0 and created.last_message_at is None
    with pytest.raises(StoreError) as taken:
        await agent.create_conversation("c1")
    assert (taken.value.code, taken.value.status) == ("Conflict", 409)
    generated = await agent.create_conversation()
    assert generated.conversation_id.startswith("conv_") and generated.metadata == {}
    unchanged = await agent.update_conversation("c1", {})
    assert unchanged.updated_at == created.updated_at
    merged = await agent.update_conversation("c1", {"a": None, "b": {"y": 2}, "c": [1]})
    assert merged.metadata == {"b": {"y": 2}, "c": [1]}
    with pytest.raises(StoreError, match="not found") as missing:
        await agent.update_conversation("nope", {})
    assert missing.value.code == "NotFound"
    assert await agent.get_conversation("nope") is None
    with pytest.raises(StoreError) as long_id:
        await agent.create_conversation("é" * 129)  # 258 bytes
    assert long_id.value.code == "BadRequest"


async def test_conversations_list_newest_first_by_cursor(agent: Any) -> None:
    for n in range(5):
        await agent.create_conversation(f"c{n}")
        await asyncio.sleep(0.002)
    first = await agent.list_conversations(limit=2)
    assert [c.conversation_id for c in first.items] == ["c4", "c3"]
    second = await agent.list_conversations(limit=2, cursor=first.next_cursor)
    third = await agent.list_conversations(limit=2, cursor=second.next_cursor)
    assert [c.conversation_id for c in second.items + third.items] == ["c2", "c1", "c0"]
    assert third.next_cursor is None


async def test_appends_number_messages_and_retries_are_idempotent(agent: Any) -> None:
    first = await agent.append_message("c1", {"text": "hi"}, role="user", message_id="m1")
    assert first.to_json()["seq"] == "1" and first.type is None
    conversation = await agent.get_conversation("c1")  # created by the append
    assert conversation is not None and conversation.message_count == 1
    again = await agent.append_message("c1", {"text": "hi"}, role="user", message_id="m1")
    assert again == first
    with pytest.raises(StoreError) as changed:
        await agent.append_message("c1", {"text": "other"}, role="user", message_id="m1")
    assert changed.value.code == "Conflict"
    with pytest.raises(StoreError) as elsewhere:
        await agent.append_message("c2", {"text": "hi"}, role="user", message_id="m1")
    assert elsewhere.value.code == "Conflict"
    assert await agent.get_conversation("c2") is None  # nothing written
    batch = [NewMessage("a", message_id="m2"), NewMessage("b")]
    with pytest.raises(StoreError) as mixed:
        await agent.append_messages(
            "c1", [NewMessage({"text": "hi"}, "user", message_id="m1"), *batch]
        )
    assert mixed.value.code == "BadRequest"
    with pytest.raises(StoreError):
        await agent.append_messages(
            "c1", [NewMessage("x", message_id="d"), NewMessage("y", message_id="d")]
        )
    appended = await agent.append_messages("c1", batch)
    assert [m.seq for m in appended] == [2, 3]
    await agent.delete_message("m2")
    await agent.delete_message("m2")  # absent is success
    readded = await agent.append_message("c1", "a", message_id="m2")
    assert readded.seq == 4


async def test_clear_keeps_the_conversation_and_its_counter(agent: Any) -> None:
    await agent.append_messages("c1", [NewMessage(n) for n in range(3)])
    await agent.state_set("c1", "run", {"step": 2})
    before = await agent.get_conversation("c1")
    await agent.clear_messages("c1")
    after = await agent.get_conversation("c1")
    assert after is not None and before is not None
    assert after.message_count == 0 and after.updated_at > before.updated_at
    assert (await agent.append_message("c1", "next")).seq == 4
    assert await agent.state_get("c1", "run") == {"step": 2}
    await agent.clear_messages("absent")
    assert await agent.get_conversation("absent") is None
    await agent.delete_conversation("c1")
    assert await agent.state_get("c1", "run") is None
    await agent.delete_conversation("c1")  # absent is success


async def test_message_pages_are_pinned_to_their_first_read(agent: Any) -> None:
    await agent.append_messages("c1", [NewMessage(n) for n in range(5)])
    first = await agent.list_messages("c1", limit=2)
    await agent.append_message("c1", "late")
    second = await agent.list_messages("c1", limit=2, cursor=first.next_cursor)
    third = await agent.list_messages("c1", limit=2, cursor=second.next_cursor)
    assert [m.payload for m in first.items + second.items + third.items] == [0, 1, 2, 3, 4]
    assert third.next_cursor is None
    newest = await agent.list_messages("c1", order="desc", limit=3)
    assert [m.payload for m in newest.items] == ["late", 4, 3]
    assert (await agent.list_messages("absent")).items == []


async def test_messages_update_whole_fields(agent: Any) -> None:
    message = await agent.append_message("c1", {"a": 1}, metadata={"k": 1}, message_id="m1")
    updated = await agent.update_message("m1", payload=[1, 2], metadata={"j": 2})
    assert (updated.payload, updated.metadata, updated.seq) == ([1, 2], {"j": 2}, message.seq)
    fetched = await agent.get_message("m1")
    assert fetched is not None and fetched.payload == [1, 2]
    with pytest.raises(StoreError) as empty:
        await agent.update_message("m1")
    assert empty.value.code == "BadRequest"
    with pytest.raises(StoreError) as missing:
        await agent.update_message("nope", role="user")
    assert missing.value.code == "NotFound"
    assert await agent.get_message("nope") is None


async def test_projects_see_nothing_of_each_other(agents: Agents) -> None:
    mine, theirs = agents("a"), agents("b")
    await mine.append_message("c1", "secret", message_id="m1")
    assert await theirs.get_conversation("c1") is None
    assert await theirs.get_message("m1") is None
    assert (await theirs.list_conversations()).items == []


async def test_concurrent_appends_get_distinct_gapless_seqs(agent: Any) -> None:
    results = await asyncio.gather(*(agent.append_message("c1", n) for n in range(32)))
    assert sorted(m.seq for m in results) == list(range(1, 33))
    batch = [NewMessage("same", message_id="r1"), NewMessage("same2", message_id="r2")]
    retries = await asyncio.gather(*(agent.append_messages("c2", batch) for _ in range(5)))
    assert all([m.seq for m in r] == [1, 2] for r in retries)
    assert (await agent.get_conversation("c2")).message_count == 2  # type: ignore[union-attr]


async def test_session_bindings_are_stable(agent: Any) -> None:
    bound = await agent.claude_session_binding("ticket-42")
    assert bound == await agent.claude_session_binding("ticket-42")
    assert bound != await agent.claude_session_binding("ticket-43")
    given = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    assert await agent.claude_session_binding(given) == given
    together = await asyncio.gather(*(agent.claude_session_binding("new") for _ in range(8)))
    assert len(set(together)) == 1


async def test_clear_racing_appends_leaves_no_half_cleared_state(agent: Any) -> None:
    await agent.append_messages("c1", [NewMessage(n) for n in range(20)])
    await asyncio.gather(
        agent.clear_messages("c1"), *(agent.append_message("c1", f"late {n}") for n in range(10))
    )
    left = [m.seq for m in (await agent.list_messages("c1", limit=1000)).items]
    assert left == list(range(31 - len(left), 31))  # whatever survived: the newest, gapless


async def test_a_store_that_is_down_is_unavailable(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gone" / "a.db")
    agent = store.agent("team")
    await agent.append_message("c1", "kept")
    (tmp_path / "gone" / "a.db").unlink()
    with pytest.raises(StoreError) as down:
        await agent.append_message("c1", "lost")
    assert (down.value.code, down.value.status) == ("Unavailable", 503)
    await store.close()


async def test_conversations_updated_in_one_millisecond_list_by_id_descending(
    agent: Any,
) -> None:
    # Ids fall as time passes: within one millisecond, the order by id is the reverse
    # of the order of creation.
    for start in range(99, 0, -20):
        names = [f"c{n:02d}" for n in range(start, start - 20, -1)]
        await asyncio.gather(*(agent.create_conversation(name) for name in names))
        listed = (await agent.list_conversations(limit=100)).items
        shown = [c.to_json()["updatedAt"] for c in listed]
        if len(set(shown)) < len(shown):
            break
    assert len(set(shown)) < len(shown), "no two conversations share a millisecond"
    keys = [(c.to_json()["updatedAt"], c.conversation_id) for c in listed]
    assert keys == sorted(keys, reverse=True)
    paged, cursor = [], None
    while True:
        page = await agent.list_conversations(limit=3, cursor=cursor)
        paged += [c.conversation_id for c in page.items]
        if (cursor := page.next_cursor) is None:
            break
    assert paged == [c.conversation_id for c in listed]


def forged(position: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode()


async def test_cursors_only_serve_the_listing_that_gave_them_out(agents: Agents) -> None:
    agent, other = agents("team"), agents("a")
    for n in range(3):
        await agent.create_conversation(f"c{n}")
    await agent.append_messages("c1", [NewMessage(n) for n in range(3)])
    conversations = (await agent.list_conversations(limit=1)).next_cursor
    messages = (await agent.list_messages("c1", limit=1)).next_cursor
    assert conversations is not None and messages is not None
    altered = conversations[:-2] + ("AA" if conversations[-2:] != "AA" else "BB")
    for position in ({"t": {"a": 1}, "i": "c1"}, {"t": 1.0, "i": 7}, {"t": "x"}, [1], "x"):
        with pytest.raises(StoreError) as refused:
            await agent.list_conversations(cursor=forged(position))
        assert (refused.value.code, refused.value.param) == ("BadRequest", "cursor")
    for seqs in ({"a": 2**80, "u": 3}, {"a": "1", "u": 3}, {"a": 1, "u": {}}):
        with pytest.raises(StoreError) as refused:
            await agent.list_messages("c1", cursor=forged(seqs))
        assert (refused.value.code, refused.value.param) == ("BadRequest", "cursor")
    for misuse in (
        lambda: agent.list_conversations(cursor=altered),
        lambda: agent.list_conversations(cursor=messages),
        lambda: agent.list_messages("c1", cursor=conversations),
        lambda: agent.list_messages("c2", cursor=messages),
        lambda: agent.list_messages("c1", order="desc", cursor=messages),
        lambda: other.list_conversations(cursor=conversations),
    ):
        with pytest.raises(StoreError) as refused:
            await misuse()
        assert (refused.value.code, refused.value.param) == ("BadRequest", "cursor")
    second = await agent.list_messages("c1", limit=1, cursor=messages)
    assert [m.payload for m in second.items] == [1]


async def test_message_updates_take_only_message_fields(agent: Any) -> None:
    await agent.append_message("c1", "a", role="user", message_id="m1")
    for fields in ({"message_id": "x"}, {"self": 1}, {"seq": 5}):
        with pytest.raises(StoreError) as refused:
            await agent.update_message("m1", **fields)
        assert (refused.value.code, refused.value.param) == ("BadRequest", next(iter(fields)))
    for field, value in (("role", {"a": 1}), ("role", ["user"]), ("type", True), ("type", 3)):
        with pytest.raises(StoreError) as refused:
            await agent.update_message("m1", **{field: value})
        assert (refused.value.code, refused.value.param) == ("BadRequest", field)
    kept = await agent.get_message("m1")
    assert kept is not None and (kept.role, kept.type, kept.payload) == ("user", None, "a")


async def test_ids_with_nul_characters_are_refused_alike(agent: Any) -> None:
    for attempt, param in (
        (lambda: agent.create_conversation("a\x00b"), "conversationId"),
        (lambda: agent.get_conversation("a\x00b"), "conversationId"),
        (lambda: agent.append_message("a\x00b", "x"), "conversationId"),
        (lambda: agent.list_messages("a\x00b"), "conversationId"),
        (lambda: agent.delete_conversation("a\x00b"), "conversationId"),
        (lambda: agent.get_message("m\x00"), "messageId"),
        (lambda: agent.delete_message("m\x00"), "messageId"),
        (lambda: agent.state_set("c1", "k\x00", 1), "key"),
    ):
        with pytest.raises(StoreError) as refused:
            await attempt()
        assert (refused.value.code, refused.value.param) == ("BadRequest", param)
    assert (await agent.list_conversations()).items == []


async def test_named_call_arguments_are_checked_before_use(agent: Any) -> None:
    key = {"project_key": "p", "session_id": "s"}
    for name, args, param in (
        ("claude.list_sessions", {"project_key": {"a": 1}}, "project_key"),
        ("claude.list_sessions", {"project_key": 1}, "project_key"),
        ("claude.list_sessions", {}, "project_key"),
        ("claude.list_sessions", {"project_key": "p", "now_ms": 1}, "now_ms"),
        ("claude.load", {"key": key, "namespace": {"a": 1}}, "namespace"),
        ("claude.put_summary", {"key": key, "value": {}, "version": 2**63, "through": 0},
         "version"),
        ("claude.put_summary", {"key": key, "value": {}, "version": True, "through": 0},
         "version"),
        ("langgraph.put_writes", {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c",
         "task_id": "k", "task_path": "", "writes": [[2**63, "ch", 1]]}, "writes"),
        ("langgraph.list", {"thread_id": ["t"]}, "thread_id"),
        ("langgraph.prune", {"thread_ids": ["t", 1], "strategy": "delete"}, "thread_ids[1]"),
        # Longer than one PostgreSQL index entry holds: refused alike everywhere.
        ("claude.append", {"key": {**key, "project_key": "p" * 3000}, "entries": [{}]},
         "key.project_key"),
        ("langgraph.put_writes", {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c",
         "task_id": "k" * 3000, "task_path": "", "writes": [[1, "ch", 1]]}, "task_id"),
    ):  # fmt: skip
        with pytest.raises(StoreError) as refused:
            await agent.call(name, args)
        assert (refused.value.code, refused.value.param) == ("BadRequest", param), name
    assert await agent.call("claude.list_sessions", {"project_key": "p"}) == []
