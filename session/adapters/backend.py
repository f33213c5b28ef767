"""Where an adapter's calls go: an agent Store in this process, or a gateway over HTTP."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Self

from ..agent_store import AgentStore, RemoteAgentStore
from ..store import SessionStore


class Backend:
    """Runs the named operations of :mod:`session.agent_store.calls` in one namespace."""

    def __init__(self, target: AgentStore | RemoteAgentStore, namespace: str = "") -> None:
        self.target = target
        self.namespace = namespace
        self._loop: asyncio.AbstractEventLoop | None = None  # where the async calls run
        self._own_loop: asyncio.AbstractEventLoop | None = None  # for sync-only callers
        self._own_loop_lock = threading.Lock()
        self._own_thread: threading.Thread | None = None

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
        """:meth:`call` from synchronous code, on any thread.

        Remotely it uses a synchronous HTTP client. In process it runs on the event loop the
        async methods use, when called from another thread, or else on one loop thread of
        the adapter's own (LangGraph calls from several worker threads at once); from inside
        a running loop it refuses rather than block that loop.
        """
        payload = {"namespace": self.namespace, **args}
        if isinstance(self.target, RemoteAgentStore):
            return self.target.call_sync(name, payload)
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = self._loop
        if running is not None and (loop is None or loop is running):
            raise RuntimeError(
                "A synchronous call from inside a running event loop would block it: "
                "use the async methods (aput, aget_tuple, abatch, ...) there."
            )
        if loop is None or not loop.is_running():
            loop = self._sync_loop()
        return asyncio.run_coroutine_threadsafe(self.target.call(name, payload), loop).result()

    def _sync_loop(self) -> asyncio.AbstractEventLoop:
        with self._own_loop_lock:
            if self._own_loop is None:
                self._own_loop = asyncio.new_event_loop()
                self._own_thread = threading.Thread(
                    target=self._own_loop.run_forever, name="adapter-calls", daemon=True
                )
                self._own_thread.start()
            return self._own_loop

    async def aclose(self) -> None:
        """Close a remote connection (an in-process store belongs to its caller)."""
        if isinstance(self.target, RemoteAgentStore):
            await self.target.close()
        with self._own_loop_lock:
            loop, thread, self._own_loop, self._own_thread = (
                self._own_loop,
                self._own_thread,
                None,
                None,
            )
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join)
            loop.close()


class OnBackend:
    """The two ways to make an adapter: ``connect`` to a gateway, or ``from_store`` in process.

    A subclass's ``__init__`` takes the :class:`Backend` first.
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    @classmethod
    def connect(cls, base_url: str, *, api_key: str | None = None, namespace: str = "") -> Self:
        """Through the gateway at ``base_url`` (its root, e.g. ``http://127.0.0.1:8080``)."""
        return cls(Backend.remote(base_url, api_key, namespace))

    @classmethod
    def from_store(
        cls, store: SessionStore, *, project: str = "default", namespace: str = ""
    ) -> Self:
        """In process, on ``store`` (memory, SQLite or PostgreSQL), in ``project``."""
        return cls(Backend.local(store, project, namespace))

    async def aclose(self) -> None:
        """Close a remote adapter's connections."""
        await self._backend.aclose()
