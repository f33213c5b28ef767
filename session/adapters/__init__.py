"""Storage for agent frameworks, each behind its own contract, on the gateway's store.

- :mod:`session.adapters.claude`: the Claude Agent SDK's ``SessionStore``.
- :mod:`session.adapters.langgraph`: a LangGraph checkpointer and ``BaseStore``.
- :mod:`session.adapters.openai_agents`: an OpenAI Agents SDK ``Session``.

Every adapter works remotely, ``connect(base_url, *, api_key=None, namespace="")`` through a
gateway's HTTP API, and in process on a session backend (memory, SQLite, PostgreSQL). A
``namespace`` partitions everything an adapter stores. Each framework is an optional install.
"""
