"""What the SQLite and PostgreSQL stores share: every call that is one operation.

A backend supplies how an operation runs (:meth:`SQLStore._read`, ``_read_now`` and
``_write``, each one transaction) and its :class:`Dialect`; the calls below are written
once for both. The hot paths (saving a turn, reading one, walking a chain) stay with each
backend, tuned for its driver.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, TypeVar

from ..browse import TurnQuery, UsageSample
from ..conversations import Conversation, StoredConversation
from ..errors import ResponseNotFound
from ..files.sql import SQLFiles
from ..keys import ApiKey
from ..models import Item, ItemPage, StoredResponse
from ..paging import Order
from ..turn_cache import TurnCache
from ..usage import Pruned, UnstoredTurn, UsageRecord, UsageRow
from . import browse, conversations, heartbeats, keys, responses
from . import events as stream_events
from . import usage as usage_ops
from .dialect import Dialect
from .shared import SQLSharedLimits
from .statement import Returning, rows, run

T = TypeVar("T")
Make = Callable[[], Returning[T]]


def _deleted(project: str, response_id: str) -> Returning[int]:
    count: int = yield run(responses.DELETE, project=project, id=response_id)
    return count


class SQLStore(SQLSharedLimits, SQLFiles, ABC):
    """The calls both SQL backends make alike, on the backend's transactions."""

    dialect: ClassVar[Dialect]
    _cache: TurnCache

    @abstractmethod
    async def _read(self, make: Make[T]) -> T:
        """Run the operation ``make`` returns in a read transaction."""

    @abstractmethod
    async def _read_now(self, make: Make[T]) -> T:
        """Run a short, bounded read (SQLite runs it inline, on the writer connection)."""

    @abstractmethod
    async def _write(self, make: Make[T], *, durable: bool = True) -> T:
        """Run the operation ``make`` returns in a write transaction; ``durable=False``
        for what a power loss may take without losing anything acknowledged (SQLite then
        returns before the commit is synced)."""

    # -- turns -------------------------------------------------------------------------

    async def deletion_generation(self) -> int:
        def generation() -> Returning[int]:
            found = yield rows(responses.DELETION_GENERATION)
            return int(found[0][0])

        return await self._read_now(generation)

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        return await self._read_now(lambda: responses.existing_ids(self.dialect, project, ids))

    async def delete(self, project: str, response_id: str) -> None:
        self._cache.discard(project, response_id)
        if await self._write(lambda: _deleted(project, response_id)) == 0:
            raise ResponseNotFound(response_id)

    async def fail_stale(self, before: float, error: Item) -> int:
        return await self._write(lambda: heartbeats.fail_stale(self.dialect, before, error))

    async def beat(self, instance_id: str, at: float) -> None:
        await self._write(lambda: heartbeats.beat(instance_id, at), durable=False)

    async def fail_orphaned(self, alive_since: float, error: Item) -> int:
        return await self._write(lambda: heartbeats.fail_orphaned(self.dialect, alive_since, error))

    # -- conversations -----------------------------------------------------------------

    async def create_conversation(
        self, conversation: Conversation, items: list[Item]
    ) -> list[Item]:
        def create() -> Returning[list[Item]]:
            yield from conversations.insert(self.dialect, conversation)
            return (
                yield from conversations.append(
                    self.dialect, conversation.project, conversation.id, items
                )
            )

        return await self._write(create)

    async def get_conversation(self, project: str, conversation_id: str) -> Conversation:
        return await self._read(lambda: conversations.load(self.dialect, project, conversation_id))

    async def update_conversation(
        self, project: str, conversation_id: str, metadata: dict[str, str]
    ) -> Conversation:
        return await self._write(
            lambda: conversations.update(self.dialect, project, conversation_id, metadata)
        )

    async def delete_conversation(self, project: str, conversation_id: str) -> None:
        await self._write(lambda: conversations.delete(self.dialect, project, conversation_id))

    async def append_items(
        self, project: str, conversation_id: str, items: list[Item]
    ) -> list[Item]:
        return await self._write(
            lambda: conversations.append(self.dialect, project, conversation_id, items)
        )

    async def list_items(
        self,
        project: str,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        return await self._read(
            lambda: conversations.page(self.dialect, project, conversation_id, after, limit, order)
        )

    async def conversation_items(self, project: str, conversation_id: str) -> list[Item]:
        return await self._read(
            lambda: conversations.all_items(self.dialect, project, conversation_id)
        )

    async def get_item(self, project: str, conversation_id: str, item_id: str) -> Item:
        return await self._read(
            lambda: conversations.get_item(self.dialect, project, conversation_id, item_id)
        )

    async def delete_item(self, project: str, conversation_id: str, item_id: str) -> None:
        await self._write(
            lambda: conversations.delete_item(self.dialect, project, conversation_id, item_id)
        )

    # -- retention, usage, stream events -----------------------------------------------

    async def prune(self, before: float, limit: int) -> Pruned:
        return await self._write(lambda: usage_ops.prune(self.dialect, before, limit))

    async def usage(self, project: str | None, since: float) -> list[UsageRow]:
        return await self._read(lambda: usage_ops.usage(self.dialect, project, since))

    async def record_usage(self, record: UsageRecord) -> None:
        await self._write(lambda: usage_ops.record_usage(record))

    async def record_unstored(self, turn: UnstoredTurn) -> None:
        await self._write(lambda: usage_ops.record_unstored(turn))

    async def append_events(
        self, project: str, response_id: str, events: list[tuple[int, str]]
    ) -> None:
        # Kept to resume a stream while it runs: the turn's own save is the durable one.
        await self._write(
            lambda: stream_events.append_events(project, response_id, events), durable=False
        )

    async def events_after(
        self, project: str, response_id: str, after: int, limit: int = 1000
    ) -> list[tuple[int, str]]:
        return await self._read_now(
            lambda: stream_events.events_after(project, response_id, after, limit)
        )

    async def prune_events(self, before: float) -> int:
        return await self._write(lambda: stream_events.prune_events(before))

    # -- whole records, for moving a store ----------------------------------------------

    async def projects(self) -> list[str]:
        return await self._read(responses.projects)

    async def list_responses(
        self, project: str, *, after: tuple[float, str] | None = None, limit: int = 100
    ) -> list[StoredResponse]:
        return await self._read(lambda: responses.page(self.dialect, project, after, limit))

    async def list_conversations(
        self, project: str, *, after: tuple[float, str] | None = None, limit: int = 100
    ) -> list[StoredConversation]:
        return await self._read(
            lambda: conversations.page_stored(self.dialect, project, after, limit)
        )

    async def restore_conversation(self, stored: StoredConversation, items: list[Item]) -> bool:
        return await self._write(lambda: conversations.restore(self.dialect, stored, items))

    # -- looking into stored turns ------------------------------------------------------

    async def ancestors(self, project: str, response_id: str, limit: int) -> list[StoredResponse]:
        return await self._read(lambda: browse.ancestors(self.dialect, project, response_id, limit))

    async def children(self, project: str, response_id: str, limit: int) -> list[StoredResponse]:
        return await self._read(lambda: browse.children(self.dialect, project, response_id, limit))

    async def find_responses(self, query: TurnQuery, limit: int) -> list[StoredResponse]:
        return await self._read(lambda: browse.find(self.dialect, query, limit))

    async def usage_samples(
        self, project: str | None, since: float, until: float
    ) -> list[UsageSample]:
        return await self._read(lambda: browse.usage_samples(self.dialect, project, since, until))

    # -- keys and shared secrets -------------------------------------------------------

    async def shared_secret(self, name: str, candidate: str) -> str:
        return await self._write(lambda: keys.shared_secret(name, candidate))

    async def create_key(self, key: ApiKey) -> None:
        await self._write(lambda: keys.insert_key(key))

    async def find_key(self, secret_hash: str) -> ApiKey | None:
        return await self._read(lambda: keys.find_key(secret_hash))

    async def list_keys(self, project: str | None = None) -> list[ApiKey]:
        return await self._read(lambda: keys.list_keys(project))

    async def revoke_key(self, key_id: str) -> ApiKey:
        return await self._write(lambda: keys.revoke_key(key_id, time.time()))
