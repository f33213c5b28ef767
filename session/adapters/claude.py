"""The Claude Agent SDK's ``SessionStore`` on the gateway's store.

    store = ClaudeSessionStore.connect("http://127.0.0.1:8080", api_key="sk-gw-...")
    options = ClaudeAgentOptions(session_store=store)

Entries keep their append order per key and are deduplicated by ``uuid`` (a retried batch is
stored once); ``mtime`` is the store's clock in Unix milliseconds; deleting a main transcript
deletes its subagents' transcripts; a subpath with ``.``/``..`` segments or an absolute one is
refused. Each main transcript keeps the SDK's folded summary, so listing sessions needs no
transcript reads.
"""

from __future__ import annotations

import json
from typing import Any

from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from ..agent_store.claude_ops import MAX_ENTRIES, check_subpath
from .backend import OnBackend

SUMMARY_ATTEMPTS = 10


def _key(key: SessionKey | SessionListSubkeysKey) -> dict[str, Any]:
    plain: dict[str, Any] = {"project_key": key["project_key"], "session_id": key["session_id"]}
    subpath = key.get("subpath")
    if subpath is not None:
        plain["subpath"] = check_subpath(subpath)
    return plain


class ClaudeSessionStore(OnBackend, SessionStore):
    """``connect(base_url, ...)`` through a gateway, or ``from_store(store, ...)`` in process."""

    async def close(self) -> None:
        await self.aclose()

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if not entries:
            return
        plain = _key(key)
        # One JSON round trip: what is stored is what ``load`` returns, in process too.
        batch = json.loads(json.dumps(entries))
        for start in range(0, len(batch), MAX_ENTRIES):  # a forked transcript comes whole
            chunk = batch[start : start + MAX_ENTRIES]
            await self._backend.call("claude.append", key=plain, entries=chunk)
        if "subpath" not in plain:
            await self._fold_summary(key, plain)

    async def _fold_summary(self, key: SessionKey, plain: dict[str, Any]) -> None:
        """Fold the entries appended since the stored summary, in append order, whoever
        appended them; a concurrent writer's fold wins and this one is redone on top."""
        for _ in range(SUMMARY_ATTEMPTS):
            current = await self._backend.call("claude.summary", key=plain)
            if current["version"] < 0 or not current["pending"]:
                return  # deleted meanwhile, or folded by another writer
            folded = fold_session_summary(current["summary"], key, current["pending"])
            stored = await self._backend.call(
                "claude.put_summary",
                key=plain,
                value=folded,
                version=current["version"],
                through=current["through"],
            )
            if stored:
                return

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        loaded: list[SessionStoreEntry] | None = await self._backend.call(
            "claude.load", key=_key(key)
        )
        return loaded

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        listed: list[SessionStoreListEntry] = await self._backend.call(
            "claude.list_sessions", project_key=project_key
        )
        return listed

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        listed: list[SessionSummaryEntry] = await self._backend.call(
            "claude.list_summaries", project_key=project_key
        )
        return listed

    async def delete(self, key: SessionKey) -> None:
        await self._backend.call("claude.delete", key=_key(key))

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        listed: list[str] = await self._backend.call("claude.list_subkeys", key=_key(key))
        return listed
