"""Serving ASGI apps on loopback ports from a background thread, for tests over real HTTP."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from starlette.types import ASGIApp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve(app: ASGIApp, port: int | None = None) -> Iterator[str]:
    """Run ``app`` under uvicorn until the block ends; yield its base URL."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def start_instance(
    config: Path, *, max_open_files: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``gateway serve`` in a process of its own; its log is beside ``config``."""

    def limit_files() -> None:
        if max_open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))

    port = free_port()
    log = config.parent / f"gateway-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gateway",
                "serve",
                "--config",
                str(config),
                "--port",
                str(port),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_files,
        )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):  # bounded wait for start-up
        if process.poll() is not None:
            raise RuntimeError(log.read_text())
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            return process, url
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
