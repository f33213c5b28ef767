"""Load and the processes under it: wrk runs and their figures, servers run for a while."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import statistics
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx


@dataclass
class Result:
    rate: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us: float | None = None  # the server's CPU per request, when measured

    def cell(self) -> str:
        text = f"{self.rate:,.0f} req/s, p50 {self.p50_ms:.2f} ms"
        if self.cpu_us is not None:
            text += f" · {self.cpu_us:,.0f} µs"
        return text + (f" ({self.errors} errors)" if self.errors else "")

    @staticmethod
    def median(runs: list[Result]) -> Result:
        """The median rate, latencies and CPU per request of repeated runs, and all their
        errors."""
        costs = [run.cpu_us for run in runs if run.cpu_us is not None]
        return Result(
            statistics.median(run.rate for run in runs),
            statistics.median(run.p50_ms for run in runs),
            statistics.median(run.p99_ms for run in runs),
            sum(run.errors for run in runs),
            statistics.median(costs) if costs else None,
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(command: list[str], ready_url: str, cwd: Path | None = None) -> Iterator[int]:
    """Run ``command`` until the block ends; yield its pid once ``ready_url`` answers."""
    process = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(300):
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited at start: {' '.join(command)}")
            try:
                httpx.get(ready_url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def _milliseconds(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def wrk(url: str, body: dict[str, Any], connections: int, seconds: float, folder: Path) -> Result:
    """POST ``body`` to ``url`` for ``seconds`` over ``connections`` keep-alive connections."""
    script = folder / "post.lua"
    script.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = {json.dumps(json.dumps(body, separators=(',', ':')))}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    duration = f"{max(1, round(seconds))}s"
    # wrk counts an answer slower than its timeout (2 s by default) as an error; a busy
    # machine's slowest answers are figures, not errors.
    command = ["wrk", "-t1", f"-c{connections}", f"-d{duration}", "--timeout", "30s"]
    command += ["--latency", "-s", str(script)]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"\s50%\s+(\S+)", out).group(1)  # type: ignore[union-attr]
    p99 = re.search(r"\s99%\s+(\S+)", out).group(1)  # type: ignore[union-attr]
    errors = sum(
        int(n) for n in re.findall(r"(?:Non-2xx or 3xx responses|timeout|read|write): (\d+)", out)
    )
    return Result(rate, _milliseconds(p50), _milliseconds(p99), errors)


def descendants(pid: int) -> list[int]:
    """The processes started by ``pid``, and theirs."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                found += [int(child), *descendants(int(child))]
    except FileNotFoundError:
        pass
    return found


def cpu_seconds(pid: int) -> float:
    """The time ``pid``, its threads and its live descendants ran on a CPU (user and
    system): each thread's ``schedstat``, counted by the scheduler to the nanosecond, where
    ``stat``'s user and system times are sampled at each clock tick."""
    total = 0
    for each in (pid, *descendants(pid)):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for task in Path(f"/proc/{each}/task").iterdir():
                total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def measured(
    url: str, body: dict[str, Any], connections: int, seconds: float, folder: Path, pid: int
) -> Result:
    """A :func:`wrk` run with the CPU per request of the server ``pid`` (see
    :func:`cpu_seconds`), which moves far less with the machine's other load than the rate."""
    before = cpu_seconds(pid)
    result = wrk(url, body, connections, seconds, folder)
    used = cpu_seconds(pid) - before
    requests = result.rate * max(1, round(seconds))
    result.cpu_us = used / requests * 1e6 if requests else None
    return result


def first_byte_ms(url: str, body: dict[str, Any], count: int) -> float:
    """Median time from sending a streamed request to its first body byte, sequentially."""
    timings = []
    with httpx.Client(timeout=60) as client:
        for _ in range(count):
            start = time.perf_counter()
            with client.stream("POST", url, json=body) as response:
                chunks = response.iter_raw()
                next(chunks)
                timings.append((time.perf_counter() - start) * 1000)
                for _ in chunks:
                    pass
    return statistics.median(timings)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0
