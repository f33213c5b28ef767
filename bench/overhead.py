"""Gateway overhead: the same load sent directly to a fake upstream and through the gateway.

    python -m bench.overhead [--requests 300] [--concurrency 8] [--depths 1,50]

Both servers run as their own processes on loopback. For chain depth N the gateway
request continues an N-turn chain (each measured request branches from the same tip,
so the depth stays N) and the direct request carries the same 2N+1 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx

HEADER = (
    f"{'mode':<10} {'depth':>5} {'target':<8} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}"
    "   gateway/direct: p50 / req/s"
)


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def process(args: list[str], url: str) -> Iterator[None]:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def load(
    send: Callable[[httpx.AsyncClient], Awaitable[None]], total: int, concurrency: int
) -> tuple[list[float], float]:
    latencies: list[float] = []
    queue = iter(range(total))
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            for _ in queue:
                start = time.perf_counter()
                await send(client)
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return latencies, time.perf_counter() - began


def summary(latencies: list[float], elapsed: float) -> tuple[float, float, float]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000, len(ordered) / elapsed


def row(mode: str, depth: int, target: str, stats: tuple[float, ...], ratios: str = "") -> str:
    p50, p99, rate = stats
    return f"{mode:<10} {depth:>5} {target:<8} {p50:8.2f} {p99:8.2f} {rate:8.1f}   {ratios}"


async def send(url: str, body: dict[str, Any], client: httpx.AsyncClient) -> None:
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200, url
        async for _ in response.aiter_bytes():
            pass


async def run(requests: int, concurrency: int, depths: list[int]) -> None:
    upstream, gateway = f"http://127.0.0.1:{_port()}", f"http://127.0.0.1:{_port()}"
    folder = Path(tempfile.mkdtemp())
    config = folder / "config.yaml"
    config.write_text(
        f"server: {{port: {gateway.rsplit(':', 1)[1]}}}\n"
        f"session: {{backend: sqlite, sqlite: {{path: {folder / 'bench.db'}}}}}\n"
        f"providers: {{fake: {{wire_api: chat_completions, base_url: {upstream}/v1}}}}\n"
        "default_provider: fake\n"
    )
    python = sys.executable
    upstream_cmd = [
        python,
        "-m",
        "uvicorn",
        "bench.fake_chat:app",
        "--port",
        upstream.rsplit(":", 1)[1],
        "--log-level",
        "warning",
    ]
    gateway_cmd = [
        python,
        "-m",
        "gateway",
        "serve",
        "--config",
        str(config),
        "--log-level",
        "warning",
    ]
    env_note = f"{requests} requests, concurrency {concurrency}, {os.cpu_count()} cores"
    with process(upstream_cmd, upstream), process(gateway_cmd, f"{gateway}/healthz"):
        print(f"gateway overhead ({env_note})")
        print(HEADER)
        async with httpx.AsyncClient(timeout=60) as setup:
            for depth in depths:
                tip = None
                messages: list[dict[str, Any]] = []
                for turn in range(depth - 1):
                    body = {"model": "m", "input": f"turn {turn}", "previous_response_id": tip}
                    tip = (await setup.post(f"{gateway}/v1/responses", json=body)).json()["id"]
                    messages += [
                        {"role": "user", "content": f"turn {turn}"},
                        {
                            "role": "assistant",
                            "content": "The quick brown fox jumps over the lazy dog.",
                        },
                    ]
                messages.append({"role": "user", "content": "measure"})
                for stream in (False, True):
                    chat_body: dict[str, Any] = {
                        "model": "m",
                        "messages": messages,
                        "stream": stream,
                    }
                    if stream:
                        chat_body["stream_options"] = {"include_usage": True}
                    gw_body = {
                        "model": "m",
                        "input": "measure",
                        "previous_response_id": tip,
                        "stream": stream,
                    }

                    direct = partial(send, f"{upstream}/v1/chat/completions", chat_body)
                    through = partial(send, f"{gateway}/v1/responses", gw_body)

                    await load(through, 20, concurrency)  # warm up
                    d = summary(*await load(direct, requests, concurrency))
                    g = summary(*await load(through, requests, concurrency))
                    mode = "stream" if stream else "json"
                    print(row(mode, depth, "direct", d))
                    print(
                        row(mode, depth, "gateway", g, f"x{g[0] / d[0]:.2f} / x{g[2] / d[2]:.2f}")
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--depths", default="1,50")
    args = parser.parse_args()
    asyncio.run(run(args.requests, args.concurrency, [int(d) for d in args.depths.split(",")]))
