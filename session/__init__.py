"""The state the gateway keeps: response turns and their chains, conversations, the save
policy, background streams' events, API keys, token usage, and the agent Store with its
framework adapters; in memory, in SQLite or in PostgreSQL.

This package knows nothing of HTTP or upstream providers.
"""

from .chain import DEFAULT_MAX_DEPTH, assemble_chain
from .conversations import Conversation, StoredConversation
from .durations import parse_duration
from .errors import (
    BackendNotInstalled,
    ChainAncestorMissing,
    ChainCycle,
    ChainError,
    ChainTooDeep,
    ConversationNotFound,
    InvalidCursor,
    InvalidData,
    ItemConflict,
    ItemNotFound,
    KeyNotFound,
    ResponseNotFound,
    SaveConflict,
    SessionError,
    StoreUnavailable,
    TurnNotContinuable,
)
from .factory import (
    PostgresSettings,
    SessionSettings,
    SQLiteSettings,
    build_store,
    check_backend_installed,
)
from .ids import new_id, new_item_id
from .keys import ApiKey, hash_secret, new_key
from .memory import MemoryStore
from .models import (
    ChainTurn,
    Item,
    ItemPage,
    RequestSnapshot,
    ResolvedChain,
    ResponseSnapshot,
    ResponseStatus,
    StoredResponse,
    normalise_input,
    trusted,
)
from .paging import Order, page_items
from .sqlite import SQLiteStore
from .store import (
    Conversations,
    Keys,
    Records,
    SessionStore,
    StreamEvents,
    Turns,
    Upkeep,
    Usage,
)
from .usage import Pruned, UnstoredTurn, UsageRecord, UsageRow, token_counts

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "ApiKey",
    "BackendNotInstalled",
    "ChainAncestorMissing",
    "ChainCycle",
    "ChainError",
    "ChainTooDeep",
    "ChainTurn",
    "Conversation",
    "ConversationNotFound",
    "Conversations",
    "InvalidCursor",
    "InvalidData",
    "Item",
    "ItemConflict",
    "ItemNotFound",
    "ItemPage",
    "KeyNotFound",
    "Keys",
    "MemoryStore",
    "Order",
    "PostgresSettings",
    "Pruned",
    "Records",
    "RequestSnapshot",
    "ResolvedChain",
    "ResponseNotFound",
    "ResponseSnapshot",
    "ResponseStatus",
    "SQLiteSettings",
    "SQLiteStore",
    "SaveConflict",
    "SessionError",
    "SessionSettings",
    "SessionStore",
    "StoreUnavailable",
    "StoredConversation",
    "StoredResponse",
    "StreamEvents",
    "TurnNotContinuable",
    "Turns",
    "UnstoredTurn",
    "Upkeep",
    "Usage",
    "UsageRecord",
    "UsageRow",
    "assemble_chain",
    "build_store",
    "check_backend_installed",
    "hash_secret",
    "new_id",
    "new_item_id",
    "new_key",
    "normalise_input",
    "page_items",
    "parse_duration",
    "token_counts",
    "trusted",
]
