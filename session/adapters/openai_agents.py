"""An OpenAI Agents SDK ``Session`` over the agent Store's messages of one conversation.

    session = StoreSession.connect("http://127.0.0.1:8080", session_id="c1")
    result = await Runner.run(agent, "Hello", session=session)

The conversation id is the session id (prefixed by ``namespace/`` when a namespace is
given), so any machine that names the session resumes it, with any model the SDK drives.
A run interrupted for approval can be kept with :meth:`StoreSession.save_run_state` and
resumed elsewhere with :meth:`StoreSession.load_run_state`.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, RunState, TResponseInputItem
from agents.memory import SessionABC, SessionSettings

from ..agent_store import AgentStore, NewMessage, RemoteAgentStore
from ..agent_store.values import MAX_BATCH
from ..store import SessionStore

PAGE = 1000
RUN_STATE_KEY = "openai_agents.run_state"


class StoreSession(SessionABC):
    """``connect(base_url, session_id=...)`` through a gateway, or ``from_store(store,
    session_id=...)`` in process."""

    def __init__(
        self,
        agent_store: AgentStore | RemoteAgentStore,
        session_id: str,
        *,
        namespace: str = "",
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        self._store = agent_store
        self.conversation_id = f"{namespace}/{session_id}" if namespace else session_id

    @classmethod
    def connect(
        cls,
        base_url: str,
        *,
        session_id: str,
        api_key: str | None = None,
        namespace: str = "",
        session_settings: SessionSettings | None = None,
    ) -> StoreSession:
        remote = RemoteAgentStore.connect(base_url, api_key=api_key)
        return cls(remote, session_id, namespace=namespace, session_settings=session_settings)

    @classmethod
    def from_store(
        cls,
        store: SessionStore,
        *,
        session_id: str,
        project: str = "default",
        namespace: str = "",
        session_settings: SessionSettings | None = None,
    ) -> StoreSession:
        local = store.agent(project)
        return cls(local, session_id, namespace=namespace, session_settings=session_settings)

    async def close(self) -> None:
        if isinstance(self._store, RemoteAgentStore):
            await self._store.close()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """All items oldest first, or the latest ``limit`` of them (``0`` gives none)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit == 0:
            return []
        if limit is not None and 0 < limit <= PAGE:
            page = await self._store.list_messages(self.conversation_id, "desc", limit)
            return [message.payload for message in reversed(page.items)]
        items: list[TResponseInputItem] = []
        cursor: str | None = None
        while True:
            page = await self._store.list_messages(self.conversation_id, "asc", PAGE, cursor)
            items.extend(message.payload for message in page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        return items[-limit:] if limit is not None and limit > 0 else items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        batch = [_message(item) for item in items]
        for start in range(0, len(batch), MAX_BATCH):
            chunk = batch[start : start + MAX_BATCH]
            await self._store.append_messages(self.conversation_id, chunk)

    async def pop_item(self) -> TResponseInputItem | None:
        popped = await self._store.pop_message(self.conversation_id)
        return None if popped is None else popped.payload

    async def clear_session(self) -> None:
        await self._store.clear_messages(self.conversation_id)

    async def save_run_state(self, state: RunState[Any, Any]) -> None:
        """Keep an interrupted run (pending approvals included) with this session."""
        await self._store.state_set(self.conversation_id, RUN_STATE_KEY, state.to_json())

    async def load_run_state(self, agent: Agent[Any]) -> RunState[Any, Agent[Any]] | None:
        """The run kept by :meth:`save_run_state`, rebuilt for ``agent``; ``None`` if none."""
        saved = await self._store.state_get(self.conversation_id, RUN_STATE_KEY)
        if saved is None:
            return None
        return await RunState.from_json(agent, saved)

    async def forget_run_state(self) -> None:
        await self._store.state_delete(self.conversation_id, RUN_STATE_KEY)


def _message(item: Any) -> NewMessage:
    role = item.get("role") if isinstance(item, dict) else None
    kind = item.get("type") if isinstance(item, dict) else None
    return NewMessage(
        item,
        role if isinstance(role, str) else None,
        kind if isinstance(kind, str) else "message" if role else None,
    )
