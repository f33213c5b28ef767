"""Running the gateway: in this process, or in ``server.workers`` forked processes sharing
one socket, each a :class:`~gateway.edge.server.GatewayServer`; the line that says it
serves."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import tempfile
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from types import FrameType

from ..config import GatewayConfig
from ..observability.metrics import MULTIPROCESS_ENV, process_ended, share_between_processes
from .server import GatewayServer, StartupFailed

logger = logging.getLogger("gateway.server")


def client_url(host: str, port: int) -> str:
    """The base URL a client on this machine gives the SDK to reach ``host``:``port``."""
    local = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{local}]:{port}/v1" if ":" in local else f"http://{local}:{port}/v1"


def log_ready(host: str, port: int, workers: int) -> None:
    """The line that says the gateway serves, and the URL its clients use."""
    every = " on every interface" if host in ("0.0.0.0", "::") else ""
    processes = f"{workers} workers " if workers > 1 else ""
    logger.info(
        "ready: %sserving%s; clients use %s (Ctrl-C stops)",
        processes,
        every,
        client_url(host, port),
    )


def serve(config: GatewayConfig, log_level: str = "info") -> None:
    """Serve in this process, or in ``server.workers`` processes sharing one socket, until
    SIGTERM or SIGINT; raise :class:`StartupFailed` if the server does not start.

    Workers are forked before anything else starts; each has its own event loop, store
    connections and upstream sessions, and they share the store's file or database.
    SIGTERM and SIGINT (and SIGHUP, as SIGTERM) are passed on to every worker, which shut
    down as one would alone. Their metrics meet in ``PROMETHEUS_MULTIPROC_DIR`` (a
    temporary folder if unset).
    """
    host, workers = config.server.host, config.server.workers
    if workers <= 1:
        GatewayServer(config, log_level, lambda port: log_ready(host, port, 1)).run()
        return
    with tempfile.TemporaryDirectory(prefix="gateway-metrics-") as scratch:
        share_between_processes(os.environ.get(MULTIPROCESS_ENV) or scratch)
        _serve_workers(config, log_level, workers)


def _worker(config: GatewayConfig, log_level: str, sock: socket.socket, parent: Connection) -> None:
    os.setpgid(0, 0)  # the terminal's Ctrl-C reaches the parent only, which passes it on once
    try:
        GatewayServer(config, log_level, lambda port: parent.send(None)).run(sockets=[sock])
    except StartupFailed as failed:
        _tell(parent, failed.cause)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        return  # a SIGINT passed on before uvicorn took the signals over: stopped as asked


def _tell(parent: Connection, cause: BaseException | None) -> None:
    try:
        parent.send(cause)
    except Exception:  # an exception that does not pickle: its text does
        parent.send(RuntimeError(f"{type(cause).__name__}: {cause}"))


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as error:
        sock.close()
        raise StartupFailed(error) from None
    sock.set_inheritable(True)
    return sock


def _serve_workers(config: GatewayConfig, log_level: str, workers: int) -> None:
    sock = _listening_socket(config.server.host, config.server.port)
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe(duplex=False) for _ in range(workers)]
    processes = [
        context.Process(target=_worker, args=(config, log_level, sock, writer), daemon=False)
        for _, writer in pipes
    ]
    for process in processes:
        process.start()
    for _, writer in pipes:
        writer.close()
    stopping: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)
        passed = signal.SIGTERM if signum == signal.SIGHUP else signum
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, passed)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    failed = _started(processes, [reader for reader, _ in pipes])
    asked_to_stop = bool(stopping)
    if failed is None:
        log_ready(config.server.host, sock.getsockname()[1], workers)
    elif not asked_to_stop:
        forward(signal.SIGTERM, None)  # one worker did not start: the others stop too
    for process in processes:
        process.join()
        if process.pid is not None:
            process_ended(process.pid)
    sock.close()
    if failed is not None and not asked_to_stop:
        raise StartupFailed(failed if isinstance(failed, BaseException) else None)


def _started(
    processes: Sequence[multiprocessing.process.BaseProcess], readers: list[Connection]
) -> BaseException | bool | None:
    """Wait until every worker serves (``None``); else what stopped one: the exception it
    sent, or ``True`` when it ended without saying."""
    waiting = set(readers)
    ended = [process.sentinel for process in processes]
    while waiting:
        ready = wait([*waiting, *ended])
        for reader in [each for each in waiting if each in ready]:
            try:
                failure: BaseException | None = reader.recv()
            except EOFError:
                return True
            if failure is not None:
                return failure
            waiting.discard(reader)
        if waiting and any(sentinel in ready for sentinel in ended):
            return True
    return None
