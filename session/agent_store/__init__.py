"""The agent Store: conversations and messages for any agent framework (see ``store``)."""

from ..sql import drive_async
from .converters import to_anthropic_messages, to_openai_input
from .cursors import CursorKey
from .errors import StoreError
from .models import AgentConversation, Message, NewMessage, Page
from .remote import RemoteAgentStore
from .store import AgentStore, MemoryRunner, Runner, SQLiteRunner

__all__ = [
    "AgentConversation",
    "AgentStore",
    "CursorKey",
    "MemoryRunner",
    "Message",
    "NewMessage",
    "Page",
    "RemoteAgentStore",
    "Runner",
    "SQLiteRunner",
    "StoreError",
    "drive_async",
    "to_anthropic_messages",
    "to_openai_input",
]
