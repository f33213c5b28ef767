"""The interface every session backend implements, in the parts its callers use.

A caller types its store as the part it needs (turns, conversations, stream events, upkeep,
keys, usage, records); :class:`SessionStore` is all of them, what a backend implements.
"""

from __future__ import annotations

from typing import Protocol

from .agent_store import AgentStore
from .browse import TurnQuery, UsageSample
from .conversations import Conversation, StoredConversation
from .keys import ApiKey
from .models import Item, ItemPage, ResolvedChain, StoredResponse
from .paging import Order
from .shared import SharedLimits
from .usage import Pruned, UnstoredTurn, UsageRecord, UsageRow


class Turns(Protocol):
    """Response turns, scoped by project: a record of another project is never visible,
    it is reported as not found."""

    async def get(self, project: str, response_id: str) -> StoredResponse:
        """Return one stored turn; raise ``ResponseNotFound`` if absent."""
        ...

    async def save(
        self,
        record: StoredResponse,
        *,
        overwrite: bool = False,
        conversation_items: list[Item] | None = None,
    ) -> None:
        """Write ``record`` after the save policy's checks, atomically with them.

        ``conversation_items`` are appended to ``record.conversation_id`` in the same
        transaction: the turn and its conversation change together or not at all.
        """
        ...

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        """Return the turns ending at ``response_id`` oldest first, and their items."""
        ...

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
        """Page through one turn's own input items."""
        ...

    async def delete(self, project: str, response_id: str) -> None:
        """Delete one turn; raise ``ResponseNotFound`` if absent. Children are kept."""
        ...


class Conversations(Protocol):
    """Conversations and their items, scoped by project."""

    async def create_conversation(
        self, conversation: Conversation, items: list[Item]
    ) -> list[Item]:
        """Store a new conversation with its first items; return the items as stored."""
        ...

    async def get_conversation(self, project: str, conversation_id: str) -> Conversation:
        """Return a conversation; raise ``ConversationNotFound`` if absent."""
        ...

    async def update_conversation(
        self, project: str, conversation_id: str, metadata: dict[str, str]
    ) -> Conversation:
        """Replace a conversation's metadata and return it."""
        ...

    async def delete_conversation(self, project: str, conversation_id: str) -> None:
        """Delete a conversation and all its items."""
        ...

    async def append_items(
        self, project: str, conversation_id: str, items: list[Item]
    ) -> list[Item]:
        """Append items all or nothing, each with the next sequence number; return them.

        An item whose id is stored with identical content is not appended again; with
        other content the whole call raises ``ItemConflict``.
        """
        ...

    async def list_items(
        self,
        project: str,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        """Page through a conversation's items in sequence order."""
        ...

    async def conversation_items(self, project: str, conversation_id: str) -> list[Item]:
        """Every item of a conversation, oldest first (the context of a new response)."""
        ...

    async def get_item(self, project: str, conversation_id: str, item_id: str) -> Item:
        """Return one item; raise ``ItemNotFound`` if absent."""
        ...

    async def delete_item(self, project: str, conversation_id: str, item_id: str) -> None:
        """Delete one item; its sequence number is never reused."""
        ...


class Upkeep(Protocol):
    """What each instance sweeps: stale and orphaned turns, expired records."""

    async def fail_stale(self, before: float, error: Item) -> int:
        """Mark turns still ``in_progress``/``queued`` created before ``before`` as failed.

        Such a turn outlived every deadline, so the instance running it is gone; its
        ``response.error`` becomes ``error``. Returns how many turns were marked.
        """
        ...

    async def beat(self, instance_id: str, at: float) -> None:
        """Record that the gateway instance ``instance_id`` was alive at ``at`` (Unix time)."""
        ...

    async def fail_orphaned(self, alive_since: float, error: Item) -> int:
        """Mark failed the ``in_progress``/``queued`` turns whose instance last beat before
        ``alive_since``, and forget those instances; return how many turns were marked.

        A turn naming no instance, or one with no heartbeat kept, is left to
        :meth:`fail_stale`. Several instances may sweep at once; each turn is marked once.
        """
        ...

    async def prune(self, before: float, limit: int) -> Pruned:
        """Delete up to ``limit`` turns created, and ``limit`` conversations last changed,
        before ``before`` (Unix time). Safe to run on several instances at once."""
        ...

    async def prune_events(self, before: float) -> int:
        """Drop the events kept before ``before`` of responses that have finished."""
        ...


class Usage(Protocol):
    """Token totals for operators."""

    async def usage(self, project: str | None, since: float) -> list[UsageRow]:
        """Token totals of the turns created since ``since`` (stored or kept with
        :meth:`record_unstored`), and of the calls kept with :meth:`record_usage`, by
        project, model and key."""
        ...

    async def record_usage(self, record: UsageRecord) -> None:
        """Keep the tokens of an upstream call that no stored turn holds (a compaction)."""
        ...

    async def record_unstored(self, turn: UnstoredTurn) -> None:
        """Keep the figures of a finished turn sent with ``store: false``; pruned with the
        turns, by the time it was created."""
        ...


class StreamEvents(Protocol):
    """Background streams' events, kept for clients that resume."""

    async def append_events(
        self, project: str, response_id: str, events: list[tuple[int, str]]
    ) -> None:
        """Keep a streamed response's events (sequence number, JSON) for clients that resume."""
        ...

    async def events_after(
        self, project: str, response_id: str, after: int, limit: int = 1000
    ) -> list[tuple[int, str]]:
        """A response's kept events with a sequence number above ``after``, in order."""
        ...


class Keys(Protocol):
    """Managed API keys: their secrets' hashes, never the secrets."""

    async def create_key(self, key: ApiKey) -> None:
        """Store a managed API key (its secret's hash, never the secret)."""
        ...

    async def find_key(self, secret_hash: str) -> ApiKey | None:
        """The key whose secret hashes to ``secret_hash``, revoked or not."""
        ...

    async def list_keys(self, project: str | None = None) -> list[ApiKey]:
        """Every managed key, or one project's, oldest first."""
        ...

    async def revoke_key(self, key_id: str) -> ApiKey:
        """Mark a key revoked (again is a no-op); raise ``KeyNotFound`` if absent."""
        ...


class Records(Protocol):
    """Every turn and conversation whole, page by page, and conversations written back as
    they were kept: what moves one store's records to another (``gateway export``, ``import``).

    Pages are ordered by creation time, then by id compared bytewise; ``after`` is the
    ``(created_at, id)`` of the last record of the previous page.
    """

    async def projects(self) -> list[str]:
        """Every project that holds a turn or a conversation, sorted."""
        ...

    async def list_responses(
        self, project: str, *, after: tuple[float, str] | None = None, limit: int = 100
    ) -> list[StoredResponse]:
        """Up to ``limit`` of ``project``'s turns, whole, that come after ``after``."""
        ...

    async def list_conversations(
        self, project: str, *, after: tuple[float, str] | None = None, limit: int = 100
    ) -> list[StoredConversation]:
        """Up to ``limit`` of ``project``'s conversations that come after ``after``."""
        ...

    async def restore_conversation(self, stored: StoredConversation, items: list[Item]) -> bool:
        """Store a conversation with its items in this order and its ``updated_at``, in
        one transaction; return ``False``, writing nothing, if its id is taken."""
        ...


class Browse(Protocol):
    """What the console reads of stored turns: chains a page at a time, branches, recent
    turns by filter, and the samples usage totals over time are made of."""

    async def ancestors(self, project: str, response_id: str, limit: int) -> list[StoredResponse]:
        """``response_id`` and up to ``limit - 1`` of its ancestors, newest first (empty if
        it is absent); the next page starts at the last one's ``previous_response_id``."""
        ...

    async def children(self, project: str, response_id: str, limit: int) -> list[StoredResponse]:
        """Up to ``limit`` turns whose ``previous_response_id`` is ``response_id``, oldest
        first."""
        ...

    async def find_responses(self, query: TurnQuery, limit: int) -> list[StoredResponse]:
        """Up to ``limit`` turns that pass ``query``, newest first (ties: id descending)."""
        ...

    async def usage_samples(
        self, project: str | None, since: float, until: float
    ) -> list[UsageSample]:
        """What usage totals read of each turn and ledger entry created in ``[since, until)``."""
        ...


class SessionStore(
    Turns,
    Conversations,
    Upkeep,
    Usage,
    StreamEvents,
    Keys,
    Records,
    Browse,
    SharedLimits,
    Protocol,
):
    """Everything a session backend keeps: turns, conversations, stream events, usage, keys,
    shared secrets and limits and the agent Store, and every record whole."""

    def agent(self, project: str = "default") -> AgentStore:
        """The agent Store (conversations and messages for agent frameworks) of ``project``."""
        ...

    async def shared_secret(self, name: str, candidate: str) -> str:
        """The secret stored as ``name``; ``candidate`` becomes it if none is stored yet.

        Instances starting together agree: the first stored wins and all return it.
        """
        ...

    async def ping(self) -> None:
        """Raise ``StoreUnavailable`` unless the store can be read and written now."""
        ...

    async def close(self) -> None:
        """Release connections and files."""
        ...
