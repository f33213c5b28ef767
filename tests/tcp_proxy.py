"""A TCP proxy that can be cut and restored, to play a database going down and back."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from psycopg.conninfo import conninfo_to_dict, make_conninfo


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; ``stop()`` refuses and drops connections.

    ``pause()`` plays a stalled network: connections stay open but no byte moves.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        # The port stays the proxy's while it is stopped: this socket holds it, bound but not
        # listening (so connections are refused), and shares it with each listening one.
        self._holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self._holder.bind(("127.0.0.1", 0))
        self.port: int = self._holder.getsockname()[1]
        self._target = (target_host, target_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()

    def _call(self, coro: object) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)  # type: ignore[arg-type]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _start(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_port=True
        )

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def _set_flowing(self, flowing: bool) -> None:
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    def pause(self) -> None:
        self._call(self._set_flowing(False))

    def resume(self) -> None:
        self._call(self._set_flowing(True))

    def start(self) -> None:
        self._call(self._start())

    def stop(self) -> None:
        self._call(self._stop())

    def close(self) -> None:
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._holder.close()


@contextmanager
def proxied_postgres(dsn: str) -> Iterator[tuple[TcpProxy, str]]:
    """A running proxy in front of the database ``dsn`` names, and a DSN through it."""
    params = conninfo_to_dict(dsn)
    proxy = TcpProxy(str(params.get("host", "127.0.0.1")), int(str(params.get("port", 5432))))
    proxy.start()
    try:
        yield proxy, make_conninfo(dsn, host="127.0.0.1", port=proxy.port)
    finally:
        proxy.close()
