"""Serving ASGI apps on loopback ports from a background thread, for tests over real HTTP."""

from __future__ import annotations

import asyncio
import re
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import uvicorn
from starlette.types import ASGIApp

from gateway.config import load_config


def loopback_socket() -> socket.socket:
    """A TCP socket bound to a port of 127.0.0.1 the OS chose, held until it is closed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def refusing_url() -> Iterator[str]:
    """The URL of a loopback port bound but not listening: connections to it are refused,
    and no server can take it until the block ends."""
    with loopback_socket() as sock:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def serve(app: ASGIApp, sock: socket.socket | None = None) -> Iterator[str]:
    """Run ``app`` under uvicorn on ``sock`` (by default a port of 127.0.0.1 the OS chose)
    until the block ends; yield its base URL."""
    sock = sock or loopback_socket()
    # Idle connections are kept longer than clients keep theirs (httpx and aiohttp: 5 and
    # 15 s), so a client never reuses one the server is closing at that moment.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_keep_alive=30)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


# uvicorn's line once a single process listens, naming the port it was given or the OS chose.
LISTENING = re.compile(r"Uvicorn running on \S+:(\d+) ")
# ``server.workers`` processes share a socket their parent bound before it started them.
WORKERS_STARTED = "Application startup complete"


def start_instance(
    config: Path,
    *,
    max_open_files: int | None = None,
    prefix: Sequence[str] = (),
    python: str = sys.executable,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``gateway serve`` in a process of its own; its log is beside ``config``.

    ``prefix`` is a command that runs the gateway's (a tracer, say). ``python`` is the
    interpreter whose installation serves; another than this one runs from ``config``'s
    folder, so that ``-m gateway`` imports its own installation, not this checkout.

    A single process is started with ``--port 0`` and its port read from its log. Of the
    socket ``server.workers`` processes share, uvicorn logs nothing: they are given a port
    found free, and another if a server took it before they bound it.
    """
    shared = load_config(config).server.workers > 1
    for _ in range(5 if shared else 1):
        asked = free_port() if shared else 0
        process, log = _launch(config, asked, max_open_files, prefix, python)
        port = _bound_port(process, log, asked)
        if port is not None:
            url = f"http://127.0.0.1:{port}"
            _wait_until_healthy(process, log, url)
            return process, url
        failure = log.read_text()
        if "Address already in use" not in failure:
            raise RuntimeError(f"the gateway did not start:\n{failure}")
        log.unlink()
    raise RuntimeError("no port stayed free long enough for the gateway's workers")


def free_port() -> int:
    """A port of 127.0.0.1 free a moment ago, for a command that must be told its port."""
    with loopback_socket() as sock:
        port: int = sock.getsockname()[1]
        return port


def _launch(
    config: Path,
    port: int,
    max_open_files: int | None,
    prefix: Sequence[str] = (),
    python: str = sys.executable,
) -> tuple[subprocess.Popen[bytes], Path]:
    def limit_files() -> None:
        if max_open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))

    command = [*prefix, python, "-m", "gateway", "serve", "--config", str(config)]
    command += ["--port", str(port)]
    handle, name = tempfile.mkstemp(prefix="gateway-", suffix=".log", dir=config.parent)
    with open(handle, "wb") as output:
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_files,
            cwd=None if python == sys.executable else config.parent,
        )
    return process, Path(name)


def _bound_port(process: subprocess.Popen[bytes], log: Path, asked: int) -> int | None:
    """The port the gateway listens on once it does; ``None`` if it exited first."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        exited = process.poll() is not None
        text = log.read_text(errors="replace")
        if asked == 0 and (listening := LISTENING.search(text)):
            return int(listening.group(1))
        if asked != 0 and WORKERS_STARTED in text:
            return asked
        if exited:
            return None
        time.sleep(0.05)
    process.kill()
    process.wait()
    return None


def _wait_until_healthy(process: subprocess.Popen[bytes], log: Path, url: str) -> None:
    for _ in range(300):  # bounded wait for start-up
        if process.poll() is not None:
            raise RuntimeError(log.read_text())
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the gateway did not start")


REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m gateway ARGS`` from the repository, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextmanager
def raw_server(handler: Handler, tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """Serve ``handler`` on a loopback port (with ``tls``, if given) from a thread of its
    own; yield the port."""
    loop = asyncio.new_event_loop()
    # asyncio drops its own reference to a handler's task when the client hangs up, and a
    # handler waiting on nothing but itself would then be collected while pending.
    running: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
            with suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()
            running.discard(task)

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        asyncio.run_coroutine_threadsafe(_stopped(server), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def _stopped(server: asyncio.Server) -> None:
    """Stop accepting, then end every handler (including one whose connection was accepted
    while the others ended) and let the closed transports finish closing."""
    server.close()
    current = asyncio.current_task()
    while True:
        await asyncio.sleep(0.01)
        handlers = [task for task in asyncio.all_tasks() if task is not current]
        if not handlers:
            break
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
    await server.wait_closed()
