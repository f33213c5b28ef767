"""The session store's exceptions, each with a stable ``code``.

SessionError
├── ResponseNotFound          the requested response does not exist (in this project)
├── InvalidCursor             an ``after``/``before`` item id that is not in the list
├── SaveConflict              the save policy refused a write
├── StoreUnavailable          the backing database cannot be reached or written
├── InvalidData               a value the database cannot hold
├── KeyNotFound               no managed API key has this id
└── ChainError                a chain that cannot be resolved
    ├── ChainAncestorMissing  a parent in the chain no longer exists
    ├── ChainCycle            the parent links loop (a corrupted database)
    ├── ChainTooDeep          more turns than the configured limit
    └── TurnNotContinuable    a turn in progress, failed or cancelled
"""

from __future__ import annotations


class SessionError(Exception):
    """Base class of every error the session store raises."""

    code = "session_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ResponseNotFound(SessionError):
    code = "response_not_found"

    def __init__(self, response_id: str) -> None:
        super().__init__(f"Response with id '{response_id}' not found.")
        self.response_id = response_id


class ConversationNotFound(SessionError):
    code = "conversation_not_found"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"Conversation with id '{conversation_id}' not found.")
        self.conversation_id = conversation_id


class ItemNotFound(SessionError):
    code = "item_not_found"

    def __init__(self, conversation_id: str, item_id: str) -> None:
        super().__init__(f"Item with id '{item_id}' not found in conversation '{conversation_id}'.")
        self.item_id = item_id


class ItemConflict(SessionError):
    code = "item_conflict"

    def __init__(self, item_id: str) -> None:
        super().__init__(
            f"An item with id '{item_id}' already exists in this conversation with other content."
        )
        self.item_id = item_id


class InvalidCursor(SessionError):
    code = "invalid_cursor"

    def __init__(self, param: str, item_id: str) -> None:
        super().__init__(f"No item with id '{item_id}' (given as '{param}').")
        self.param = param
        self.item_id = item_id


class SaveConflict(SessionError):
    code = "save_conflict"

    def __init__(self, response_id: str, reason: str) -> None:
        super().__init__(f"Cannot save response '{response_id}': {reason}")
        self.response_id = response_id


class StoreUnavailable(SessionError):
    code = "store_unavailable"


class InvalidData(SessionError):
    code = "invalid_data"


class KeyNotFound(SessionError):
    code = "key_not_found"

    def __init__(self, key_id: str) -> None:
        super().__init__(f"No API key with id '{key_id}'.")
        self.key_id = key_id


class BackendNotInstalled(SessionError):
    code = "backend_not_installed"


class ChainError(SessionError):
    code = "chain_error"

    def __init__(self, message: str, response_id: str) -> None:
        super().__init__(message)
        self.response_id = response_id


class ChainAncestorMissing(ChainError):
    code = "chain_ancestor_missing"

    def __init__(self, response_id: str) -> None:
        super().__init__(
            f"Response '{response_id}' in the chain of previous responses no longer exists.",
            response_id,
        )


class ChainCycle(ChainError):
    code = "chain_cycle"

    def __init__(self, response_id: str) -> None:
        super().__init__(
            f"The chain of previous responses loops back to '{response_id}'.", response_id
        )


class ChainTooDeep(ChainError):
    code = "chain_too_deep"

    def __init__(self, response_id: str, max_depth: int) -> None:
        super().__init__(
            f"The chain ending at '{response_id}' is longer than {max_depth} turns.", response_id
        )
        self.max_depth = max_depth


class TurnNotContinuable(ChainError):
    code = "turn_not_continuable"

    def __init__(self, response_id: str, status: str) -> None:
        super().__init__(
            f"Response '{response_id}' has status '{status}' and cannot be continued.",
            response_id,
        )
        self.status = status
