"""Syncs to the disk: how long one takes here, and how many a target makes per turn.

A target's syncs are counted with ``strace -f -c -e trace=fsync,fdatasync -p PID`` (and
``-p`` each of its child processes: the gateway's WAL sync process) attached for one load
of its own (a traced process runs slower, so that load is not one of the timed ones).
PostgreSQL syncs its WAL in its own server processes: its count is the server's
``pg_stat_wal.wal_sync`` over the load.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from .load import descendants, wrk

T = TypeVar("T")
SYNC_CALLS = ("fsync", "fdatasync")


def sync_latency_ms(folder: Path, count: int = 200) -> tuple[float, float]:
    """The median and 99th percentile of a 4 KiB write then ``fdatasync`` in ``folder``."""
    path = folder / "sync-probe"
    timings = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        block = os.urandom(4096)
        for n in range(count):
            start = time.perf_counter()
            os.pwrite(fd, block, (n % 64) * 4096)
            os.fdatasync(fd)
            timings.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.99) - 1]


def strace_unusable() -> str | None:
    """Why syncs cannot be counted with strace here, or ``None``."""
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install strace)"
    probe = subprocess.run(
        ["strace", "-f", "-c", "-o", "/dev/null", "-e", "trace=fsync", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.strip()}"
    return None


def count_syncs(pid: int, load: Callable[[], T], folder: Path) -> tuple[int, T]:
    """The fsync and fdatasync calls of ``pid`` (all its threads, and its child processes:
    the gateway's WAL sync process) while ``load`` runs, and what ``load`` returned."""
    summary = folder / f"syncs-{pid}.txt"
    attach = [arg for each in (pid, *descendants(pid)) for arg in ("-p", str(each))]
    tracer = subprocess.Popen(
        ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(summary), *attach],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert tracer.stderr is not None
        for line in tracer.stderr:  # strace names each thread it attached to
            if "attached" in line:
                break
        time.sleep(0.2)  # the process's other threads
        result = load()
    finally:
        tracer.send_signal(signal.SIGINT)  # detach and write the summary
        tracer.communicate(timeout=60)  # and close its error pipe
    return parse_summary(summary.read_text()), result


def parse_summary(text: str) -> int:
    """The calls of fsync and fdatasync in a ``strace -c`` summary."""
    calls = 0
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[-1] in SYNC_CALLS:
            numbers = [f for f in fields[:-1] if re.fullmatch(r"[\d.]+", f)]
            calls += int(numbers[3])  # % time, seconds, usecs/call, calls[, errors]
    return calls


def postgres_wal_syncs(dsn: str) -> int:
    """The PostgreSQL server's WAL syncs so far (its statistics are flushed lazily)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()
    return int(row[0]) if row else 0


def sync_counts(
    targets: dict[str, tuple[str, int]],
    bodies: dict[str, dict[str, Any]],
    seconds: float,
    folder: Path,
    dsn: str | None,
) -> list[str]:
    """A table of each target's syncs per fresh turn at 8 connections, from one load each
    under strace (the figures of that load, slowed by the tracer, are not reported).

    ``targets``: name to (URL, pid); ``dsn``: the server of the target named postgres."""
    if (reason := strace_unusable()) is not None:
        return ["", f"Syncs per turn not counted: {reason}."]
    lines = [
        "",
        "Syncs to the disk per fresh turn at 8 connections (fsync + fdatasync of the process, "
        "counted by strace over one load):",
        "",
        "| target | turns | syncs | syncs per turn |",
        "|---|---|---|---|",
    ]
    for name, (base, pid) in targets.items():
        url = base if name == "direct upstream" else f"{base}/v1/responses"
        body = bodies[name]
        before = postgres_wal_syncs(dsn) if dsn and "postgres" in name else 0
        calls, load = count_syncs(pid, partial(wrk, url, body, 8, seconds, folder), folder)
        turns = round(load.rate * max(1, round(seconds)))
        label = name
        if dsn and "postgres" in name:
            time.sleep(1)  # the server's statistics are flushed lazily
            calls += postgres_wal_syncs(dsn) - before
            label += " (with the server's WAL syncs, pg_stat_wal)"
        lines.append(f"| {label} | ≈{turns:,} | {calls:,} | {calls / max(turns, 1):.3f} |")
    return lines
