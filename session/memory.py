"""An in-process store: fast, lost at exit, for tests and throwaway gateways."""

from __future__ import annotations

import json
import time

import orjson

from .agent_store import AgentStore, CursorKey, MemoryRunner
from .browse import TurnQuery, UsageSample, newest_first, sample_of, unstored_sample
from .chain import DEFAULT_MAX_DEPTH
from .conversations import Conversation, StoredConversation
from .errors import ConversationNotFound, ItemNotFound, ResponseNotFound
from .files.memory import MemoryFiles
from .memory_keys import MemoryKeys
from .memory_records import ConversationState, Serialised, serialised_chain_turn
from .models import ChainTurn, Item, ItemPage, ResolvedChain, StoredResponse
from .paging import Order, page_items
from .policy import check_save
from .shared import InProcessLimits
from .sqlite.schema import migrate
from .turn_cache import TurnCache, resolve_cached
from .usage import Pruned, UnstoredTurn, UsageRecord, UsageRow, usage_of


class MemoryStore(InProcessLimits, MemoryKeys, MemoryFiles):
    """Keeps records serialised, so callers mutating what they saved or read change nothing.

    Chains are resolved as the other backends do: through a cache of decoded turns (its
    item lists are shared with callers, who must not change them) and the chains resolved
    last, dropped by any delete. Every method runs without awaiting, so each is atomic on
    the event loop.
    """

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH, cache_turns: int = 20_000) -> None:
        InProcessLimits.__init__(self)
        MemoryKeys.__init__(self)
        MemoryFiles.__init__(self)
        self._max_depth = max_depth
        self._cache = TurnCache(cache_turns)
        self._deletions = 0  # the deletion generation
        self._responses: dict[str, dict[str, str]] = {}
        self._unfinished: dict[tuple[str, str], float] = {}  # (project, id) -> created_at
        self._beats: dict[str, float] = {}  # instance id -> when it was last alive
        self._ledger: list[UsageRecord] = []  # tokens no stored turn holds
        self._unstored: list[UnstoredTurn] = []  # figures of turns sent with store: false
        self._conversations: dict[str, dict[str, ConversationState]] = {}
        self._agent = MemoryRunner(migrate)
        self._cursor_key = CursorKey(self.shared_secret)
        # (project, response id) -> sequence number -> (event JSON, time kept)
        self._events: dict[tuple[str, str], dict[int, tuple[str, float]]] = {}

    # -- responses ---------------------------------------------------------------------

    def _project(self, project: str) -> Serialised[StoredResponse]:
        serialised = self._responses.setdefault(project, {})
        return Serialised(serialised, StoredResponse.model_validate_json)

    def _find(self, project: str, response_id: str) -> StoredResponse:
        record = self._project(project).get(response_id)
        if record is None:
            raise ResponseNotFound(response_id)
        return record

    async def get(self, project: str, response_id: str) -> StoredResponse:
        return self._find(project, response_id)

    async def save(
        self,
        record: StoredResponse,
        *,
        overwrite: bool = False,
        conversation_items: list[Item] | None = None,
    ) -> None:
        check_save(
            record,
            self._project(record.project).get(record.id),
            overwrite=overwrite,
        )
        if conversation_items is not None and record.conversation_id is not None:
            self._conversation(record.project, record.conversation_id).append(conversation_items)
        serialised = record.model_dump_json()
        self._responses[record.project][record.id] = serialised
        # The cached turn decodes its own copy of the items.
        self._cache.put(record.project, serialised_chain_turn(serialised))
        key = (record.project, record.id)
        if record.status in ("in_progress", "queued"):
            self._unfinished[key] = record.created_at
        else:
            self._unfinished.pop(key, None)

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        return await resolve_cached(self._cache, self, project, response_id, self._max_depth)

    async def deletion_generation(self) -> int:
        return self._deletions

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        records = self._responses.get(project, {})
        return {response_id for response_id in ids if response_id in records}

    async def chain_turns(self, project: str, head: str, limit: int) -> list[ChainTurn]:
        records = self._responses.get(project, {})
        turns: list[ChainTurn] = []
        current: str | None = head
        while current in records and len(turns) < limit:
            turns.append(serialised_chain_turn(records[current]))
            current = turns[-1].previous_response_id
        return turns

    async def list_input_items(
        self,
        project: str,
        response_id: str,
        *,
        after: str | None = None,
        before: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        items = self._find(project, response_id).request.input
        return page_items(items, after=after, before=before, limit=limit, order=order)

    async def delete(self, project: str, response_id: str) -> None:
        if self._responses.get(project, {}).pop(response_id, None) is None:
            raise ResponseNotFound(response_id)
        self._deletions += 1
        self._cache.discard(project, response_id)
        self._unfinished.pop((project, response_id), None)

    # -- conversations -----------------------------------------------------------------

    def _conversation(self, project: str, conversation_id: str) -> ConversationState:
        state = self._conversations.get(project, {}).get(conversation_id)
        if state is None:
            raise ConversationNotFound(conversation_id)
        return state

    async def create_conversation(
        self, conversation: Conversation, items: list[Item]
    ) -> list[Item]:
        state = ConversationState(conversation.model_dump_json(), conversation.created_at)
        stored = state.append(items)
        self._conversations.setdefault(conversation.project, {})[conversation.id] = state
        return stored

    async def get_conversation(self, project: str, conversation_id: str) -> Conversation:
        return Conversation.model_validate_json(self._conversation(project, conversation_id).record)

    async def update_conversation(
        self, project: str, conversation_id: str, metadata: dict[str, str]
    ) -> Conversation:
        state = self._conversation(project, conversation_id)
        updated = Conversation.model_validate_json(state.record).model_copy(
            update={"metadata": dict(metadata)}
        )
        state.record = updated.model_dump_json()
        state.updated_at = time.time()
        return updated

    async def delete_conversation(self, project: str, conversation_id: str) -> None:
        self._conversation(project, conversation_id)
        del self._conversations[project][conversation_id]

    async def append_items(
        self, project: str, conversation_id: str, items: list[Item]
    ) -> list[Item]:
        return self._conversation(project, conversation_id).append(items)

    async def list_items(
        self,
        project: str,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        items = await self.conversation_items(project, conversation_id)
        return page_items(items, after=after, limit=limit, order=order)

    async def conversation_items(self, project: str, conversation_id: str) -> list[Item]:
        state = self._conversation(project, conversation_id)
        return [json.loads(item) for item in state.items.values()]

    async def get_item(self, project: str, conversation_id: str, item_id: str) -> Item:
        state = self._conversation(project, conversation_id)
        if item_id not in state.items:
            raise ItemNotFound(conversation_id, item_id)
        item: Item = json.loads(state.items[item_id])
        return item

    async def delete_item(self, project: str, conversation_id: str, item_id: str) -> None:
        state = self._conversation(project, conversation_id)
        if state.items.pop(item_id, None) is None:
            raise ItemNotFound(conversation_id, item_id)

    async def fail_stale(self, before: float, error: Item) -> int:
        stale = [key for key, created in self._unfinished.items() if created < before]
        return await self._fail(stale, error)

    async def beat(self, instance_id: str, at: float) -> None:
        self._beats[instance_id] = at

    async def fail_orphaned(self, alive_since: float, error: Item) -> int:
        dead = {instance for instance, at in self._beats.items() if at < alive_since}
        orphaned = [key for key in self._unfinished if self._find(*key).instance_id in dead]
        for instance in dead:
            del self._beats[instance]
        return await self._fail(orphaned, error)

    async def _fail(self, keys: list[tuple[str, str]], error: Item) -> int:
        for project, response_id in keys:
            record = self._find(project, response_id)
            response = record.response.model_copy(update={"error": dict(error)})
            failed = record.model_copy(
                update={"status": "failed", "completed_at": time.time(), "response": response}
            )
            await self.save(failed, overwrite=True)
        return len(keys)

    async def prune(self, before: float, limit: int) -> Pruned:
        responses = [
            (project, response_id)
            for project, records in self._responses.items()
            for response_id, record in records.items()
            if json.loads(record)["created_at"] < before
        ][:limit]
        for project, response_id in responses:
            await self.delete(project, response_id)
        conversations = [
            (project, conversation_id)
            for project, states in self._conversations.items()
            for conversation_id, state in states.items()
            if state.updated_at < before
        ][:limit]
        for project, conversation_id in conversations:
            del self._conversations[project][conversation_id]
        kept = len(self._ledger) + len(self._unstored)
        self._ledger = [entry for entry in self._ledger if entry.created_at >= before]
        self._unstored = [turn for turn in self._unstored if turn.created_at >= before]
        pruned = kept - len(self._ledger) - len(self._unstored)
        return Pruned(len(responses), len(conversations), pruned)

    async def usage(self, project: str | None, since: float) -> list[UsageRow]:
        projects = self._responses if project is None else [project]
        return usage_of(
            (
                record
                for name in projects
                for record in self._project(name).values()
                if record.created_at >= since
            ),
            (
                entry
                for entry in self._ledger
                if entry.created_at >= since and project in (None, entry.project)
            ),
            (
                turn
                for turn in self._unstored
                if turn.created_at >= since and project in (None, turn.project)
            ),
        )

    async def record_usage(self, record: UsageRecord) -> None:
        self._ledger.append(record)

    async def record_unstored(self, turn: UnstoredTurn) -> None:
        self._unstored.append(turn)

    # -- looking into stored turns ------------------------------------------------------

    async def ancestors(self, project: str, response_id: str, limit: int) -> list[StoredResponse]:
        records = self._project(project)
        found: list[StoredResponse] = []
        current: str | None = response_id
        while current is not None and current in records and len(found) < limit:
            found.append(records[current])
            current = found[-1].previous_response_id
        return found

    async def children(self, project: str, response_id: str, limit: int) -> list[StoredResponse]:
        records = self._responses.get(project, {})
        found = [
            self._project(project)[child]
            for child, record in records.items()
            if orjson.loads(record)["previous_response_id"] == response_id
        ]
        return sorted(found, key=lambda record: (record.created_at, record.id))[:limit]

    async def find_responses(self, query: TurnQuery, limit: int) -> list[StoredResponse]:
        projects = self._responses if query.project is None else [query.project]
        every = (record for name in projects for record in self._project(name).values())
        return newest_first(every, query, limit)

    async def usage_samples(
        self, project: str | None, since: float, until: float
    ) -> list[UsageSample]:
        projects = self._responses if project is None else [project]
        samples = [
            sample_of(record)
            for name in projects
            for record in self._project(name).values()
            if since <= record.created_at < until
        ]
        samples.extend(
            UsageSample(e.created_at, e.project, e.model, None, None, None, e.tokens, 0.0, False)
            for e in self._ledger
            if since <= e.created_at < until and project in (None, e.project)
        )
        samples.extend(
            unstored_sample(turn)
            for turn in self._unstored
            if since <= turn.created_at < until and project in (None, turn.project)
        )
        return samples

    async def append_events(
        self, project: str, response_id: str, events: list[tuple[int, str]]
    ) -> None:
        kept = self._events.setdefault((project, response_id), {})
        now = time.time()
        for seq, event in events:
            kept.setdefault(seq, (event, now))

    async def events_after(
        self, project: str, response_id: str, after: int, limit: int = 1000
    ) -> list[tuple[int, str]]:
        kept = self._events.get((project, response_id), {})
        return [(seq, kept[seq][0]) for seq in sorted(kept) if seq > after][:limit]

    async def prune_events(self, before: float) -> int:
        dropped = 0
        for key, kept in list(self._events.items()):
            if key in self._unfinished:
                continue
            for seq in [seq for seq, (_, at) in kept.items() if at < before]:
                del kept[seq]
                dropped += 1
            if not kept:
                del self._events[key]
        return dropped

    # -- whole records, for moving a store ----------------------------------------------

    async def projects(self) -> list[str]:
        held = {project for project, records in self._responses.items() if records}
        held.update(project for project, states in self._conversations.items() if states)
        return sorted(held)

    async def list_responses(
        self, project: str, *, after: tuple[float, str] | None = None, limit: int = 100
    ) -> list[StoredResponse]:
        records = sorted(self._project(project).values(), key=lambda r: (r.created_at, r.id))
        return [r for r in records if after is None or (r.created_at, r.id) > after][:limit]

    async def list_conversations(
        self, project: str, *, after: tuple[float, str] | None = None, limit: int = 100
    ) -> list[StoredConversation]:
        kept = [
            StoredConversation(Conversation.model_validate_json(state.record), state.updated_at)
            for state in self._conversations.get(project, {}).values()
        ]
        kept.sort(key=lambda c: (c.conversation.created_at, c.conversation.id))
        return [
            c
            for c in kept
            if after is None or (c.conversation.created_at, c.conversation.id) > after
        ][:limit]

    async def restore_conversation(self, stored: StoredConversation, items: list[Item]) -> bool:
        conversation = stored.conversation
        if conversation.id in self._conversations.get(conversation.project, {}):
            return False
        await self.create_conversation(conversation, items)
        self._conversation(conversation.project, conversation.id).updated_at = stored.updated_at
        return True

    def agent(self, project: str = "default") -> AgentStore:
        """The agent Store of ``project``, in this process."""
        return AgentStore(self._agent, project, cursor_key=self._cursor_key)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._responses.clear()
        self._unfinished.clear()
        self._conversations.clear()
        self._keys.clear()
        self._events.clear()
        self._agent.close()
