"""Where an adapter's calls go: an agent Store in this process, or a gateway over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

from ..agent_store import AgentStore, RemoteAgentStore
from ..store import SessionStore


class Backend:
    """Runs the named operations of :mod:`session.agent_store.calls` in one namespace."""

    def __init__(self, target: AgentStore | RemoteAgentStore, namespace: str = "") -> None:
        self.target = target
        self.namespace = namespace
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def local(cls, store: SessionStore, project: str, namespace: str) -> Backend:
        return cls(store.agent(project), namespace)

    @classmethod
    def remote(cls, base_url: str, api_key: str | None, namespace: str) -> Backend:
        return cls(RemoteAgentStore.connect(base_url, api_key=api_key), namespace)

    async def call(self, name: str, **args: Any) -> Any:
        self._loop = asyncio.get_running_loop()
        return await self.target.call(name, {"namespace": self.namespace, **args})

    def call_sync(self, name: str, **args: Any) -> Any:
        """:meth:`call` from synchronous code.

        Remotely it uses a synchronous HTTP client. In process it runs on the event loop the
        adapter's async methods use, when called from another thread, or else on a loop of
        its own; from inside a running loop it refuses rather than block that loop.
        """
        payload = {"namespace": self.namespace, **args}
        if isinstance(self.target, RemoteAgentStore):
            return self.target.call_sync(name, payload)
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = self._loop
        if loop is not None and loop.is_running() and loop is not running:
            return asyncio.run_coroutine_threadsafe(self.target.call(name, payload), loop).result()
        if running is not None:
            raise RuntimeError(
                "A synchronous call from inside a running event loop would block it: "
                "use the async methods (aput, aget_tuple, abatch, ...) there."
            )
        return asyncio.run(self.target.call(name, payload))

    async def aclose(self) -> None:
        """Close a remote connection (an in-process store belongs to its caller)."""
        if isinstance(self.target, RemoteAgentStore):
            await self.target.close()
