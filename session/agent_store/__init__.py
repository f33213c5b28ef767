"""The agent Store: conversations and messages for any agent framework (see ``store``)."""

from .errors import StoreError
from .models import Conversation, Message, NewMessage, Page
from .store import AgentStore, MemoryRunner, Runner, SQLiteRunner, drive_async

__all__ = [
    "AgentStore",
    "Conversation",
    "MemoryRunner",
    "Message",
    "NewMessage",
    "Page",
    "Runner",
    "SQLiteRunner",
    "StoreError",
    "drive_async",
]
