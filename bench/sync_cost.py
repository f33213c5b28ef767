"""What a durable commit costs: the gateway on SQLite with ``synchronous: full`` and ``normal``.

    python -m bench.sync_cost [--seconds 5] [--rounds 3] [--baseline PYTHON [--baseline-from DIR]]

Fresh non-streamed turns at 8 connections and at 1, from a fast fake Chat Completions
upstream, with wrk (one thread). Each figure is the median of ``rounds`` runs, and the runs
take turns between the targets, so a slower spell of a shared machine falls on all of them.
Beside each rate, the server's CPU time per turn read from ``/proc``: the time the server
process, all its threads and its child processes (the WAL's sync process) ran, user and
system, which moves far less with the machine's other load than the rate does.

``--baseline`` adds the same two settings run by another installation's Python (an earlier
checkout's venv), from ``--baseline-from`` (its checkout, which ``-m gateway`` then imports;
by default a scratch folder): a before and after in one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from .compare import FRESH, gateway_config
from .fake_chat import serve_command
from .load import cpu_seconds, free_port, running, wrk
from .syncs import sync_latency_ms

LOADS = [("8 connections", 8), ("1 connection", 1)]


def run(seconds: float, rounds: int, baseline: str | None, baseline_from: Path | None) -> str:
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        upstream_port = free_port()
        upstream = f"http://127.0.0.1:{upstream_port}"
        stack.enter_context(
            running(serve_command(python, upstream_port), f"{upstream}/v1/chat/completions")
        )
        installs: list[tuple[str, str, Path | None]] = [("this gateway", python, None)]
        if baseline is not None:
            installs.insert(0, ("baseline", baseline, baseline_from or folder))
        targets: dict[str, tuple[str, int]] = {}
        for label, interpreter, cwd in installs:
            for synchronous in ("full", "normal"):
                port = free_port()
                config = gateway_config(folder, port, upstream, "sqlite", None, 1, synchronous)
                base = f"http://127.0.0.1:{port}"
                command = [interpreter, "-m", "gateway", "serve", "--config", str(config)]
                pid = stack.enter_context(running(command, f"{base}/healthz", cwd=cwd))
                targets[f"{label}, {synchronous}"] = (base, pid)
        for base, _ in targets.values():  # warm up: first syncs, caches, the upstream's pool
            wrk(f"{base}/v1/responses", FRESH, 8, 1, folder)
        rates: dict[tuple[str, str], list[float]] = {}
        costs: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for load, connections in LOADS:
                for name, (base, pid) in targets.items():
                    before = cpu_seconds(pid)
                    result = wrk(f"{base}/v1/responses", FRESH, connections, seconds, folder)
                    used = cpu_seconds(pid) - before
                    turns = result.rate * max(1, round(seconds))
                    rates.setdefault((load, name), []).append(result.rate)
                    costs.setdefault((load, name), []).append(used / turns * 1e6)
        header = ["load", *targets]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for load, _ in LOADS:
            cells = [
                f"{statistics.median(rates[load, name]):,.0f} req/s · "
                f"{statistics.median(costs[load, name]):,.0f} µs"
                for name in targets
            ]
            lines.append(f"| {load} | " + " | ".join(cells) + " |")
        notes = [""]
        for label, _, _ in installs:
            full, normal = f"{label}, full", f"{label}, normal"
            at8 = statistics.median(rates["8 connections", full]) / statistics.median(
                rates["8 connections", normal]
            )
            cpu1 = statistics.median(costs["1 connection", full]) / statistics.median(
                costs["1 connection", normal]
            )
            notes.append(
                f"- {label}: full / normal throughput at 8 connections {at8:.2f}; "
                f"CPU per turn at 1 connection {cpu1:.2f}"
            )
        p50, p99 = sync_latency_ms(folder)
        setting = (
            f"{seconds:g} s per run, medians of {rounds} rounds, wrk -t1, {os.cpu_count()} "
            "cores; each cell: req/s · server CPU µs per turn (process, threads, children); "
            f"this disk's 4 KiB write + fdatasync: p50 {p50:.2f} ms, p99 {p99:.2f} ms"
        )
        return "\n".join([setting, *lines, *notes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", metavar="PYTHON", help="another installation's Python")
    parser.add_argument("--baseline-from", metavar="DIR", type=Path, help="where it runs from")
    args = parser.parse_args()
    print(run(args.seconds, args.rounds, args.baseline, args.baseline_from))


if __name__ == "__main__":
    main()
