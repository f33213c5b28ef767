"""LangGraph on the gateway's store: a checkpointer and a long-term memory store.

    checkpointer = GatewayCheckpointer.connect("http://127.0.0.1:8080", api_key="sk-gw-...")
    graph = builder.compile(checkpointer=checkpointer, store=GatewayStore.connect(...))

Checkpoints (with their pending writes) are kept apart from the agent Store's messages;
``delete_thread`` removes a thread's checkpoints and writes.
"""

from .langgraph_checkpointer import GatewayCheckpointer
from .langgraph_store import GatewayStore

__all__ = ["GatewayCheckpointer", "GatewayStore"]
