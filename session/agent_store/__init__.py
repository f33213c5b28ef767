"""The agent Store: conversations and messages for any agent framework (see ``store``)."""

from .errors import StoreError
from .models import Conversation, Message, NewMessage, Page
from .remote import RemoteAgentStore
from .store import AgentStore, MemoryRunner, Runner, SQLiteRunner, drive_async

__all__ = [
    "AgentStore",
    "Conversation",
    "MemoryRunner",
    "Message",
    "NewMessage",
    "Page",
    "RemoteAgentStore",
    "Runner",
    "SQLiteRunner",
    "StoreError",
    "drive_async",
]
