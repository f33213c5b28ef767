"""Side by side: the fake upstream alone, this gateway on each store, GodeX and agentic-api.

    python -m bench.compare [--seconds 10] [--rounds 1] [--postgres DSN] [--godex PATH]
                            [--agentic-api PATH] [--workers 1] [--soak-seconds 0]
                            [--baseline PYTHON [--baseline-from DIR]]

Every process runs on this machine: a fast fake upstream (Chat Completions and Responses,
the same answer on both), each target in a process of its own on its default settings
(access log on), and wrk (one thread) as the load generator, so that the load generator
is not the bottleneck. GodeX is measured when its binary is found (``--godex``, ``$GODEX``,
``./node_modules/.bin/godex`` or ``godex`` on ``PATH``; install it with ``npm install
@ahoo-wang/godex-linux-x64@1.2.0``), vLLM's agentic-api when its ``agentic-server`` is
(``--agentic-api``, ``$AGENTIC_API``, ``.cache/agentic-api/bin/agentic-server`` or on
``PATH``; install it with ``python3.11 -m venv .cache/agentic-api &&
.cache/agentic-api/bin/pip install agentic-api==0.9.0``), else each is skipped. agentic-api
forwards to a Responses upstream only, so beside it the gateway runs on the ``responses``
wire too, on the same fake upstream.

Loads: fresh non-streamed turns at 8 connections and at 1; streamed turns at 8; turns
continuing a 50-turn chain (every request branches from the same tip) at 8. Each cell gives
the rate, the p50 latency and the server's CPU time per request (user and system of the
process, its threads and its child processes, read from ``/proc``), which moves far less
with the machine's other load than the rate. Then the ratios the targets name, and per
gateway store: the latency added at 1 connection, the time to first byte of a stream over
direct, and a 10-turn against a 10,000-turn chain continued at 1 connection.

The gateway on SQLite runs twice: with durable commits (``synchronous: full``, the
default) and with ``synchronous: normal``. The report's first line gives the disk's sync
latency, and a second table the syncs each target makes per turn (see :mod:`bench.syncs`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx

from .fake_chat import serve_command
from .load import Result, first_byte_ms, free_port, measured, rss_kib, running, wrk
from .storage import seed, seeded_messages, throwaway_schema
from .syncs import sync_counts, sync_latency_ms

FRESH = {"model": "m", "input": "hello there"}
DIRECT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}
REPLY = "The quick brown fox jumps over the lazy dog."


def chain(base: str, depth: int) -> str:
    """Create a ``depth``-turn chain through a Responses target; return its tip."""
    tip: str | None = None
    with httpx.Client(base_url=base, timeout=60) as client:
        for turn in range(depth):
            body = {"model": "m", "input": f"turn {turn}", "previous_response_id": tip}
            response = client.post("/v1/responses", json=body)
            response.raise_for_status()
            tip = str(response.json()["id"])
    assert tip is not None
    return tip


def chain_messages(depth: int) -> list[dict[str, str]]:
    messages = []
    for turn in range(depth):
        messages += [
            {"role": "user", "content": f"turn {turn}"},
            {"role": "assistant", "content": REPLY},
        ]
    return [*messages, {"role": "user", "content": "hello there"}]


def find_godex(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("GODEX"), "node_modules/.bin/godex"):
        if candidate and Path(candidate).is_file():
            return candidate
    return shutil.which("godex")


def find_agentic_api(given: str | None) -> str | None:
    candidates = (given, os.environ.get("AGENTIC_API"), ".cache/agentic-api/bin/agentic-server")
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    return shutil.which("agentic-server")


def agentic_api_command(binary: str, folder: Path, port: int, upstream: str) -> list[str]:
    """agentic-api's gateway alone (no vLLM of its own), on SQLite, forwarding to ``upstream``."""
    return [
        os.path.abspath(binary),
        "--llm-api-base",
        f"{upstream}/v1",
        "--openai-api-key",
        "sk-bench",
        "--skip-llm-ready-check",
        "--gateway-host",
        "127.0.0.1",
        "--gateway-port",
        str(port),
        "--db-url",
        f"sqlite://{folder / 'agentic-api.db'}?mode=rwc",
    ]


def gateway_config(
    folder: Path,
    port: int,
    upstream: str,
    backend: str,
    dsn: str | None,
    workers: int = 1,
    synchronous: str | None = "full",
    wire: str = "chat_completions",
) -> Path:
    """``synchronous=None`` leaves the setting out, for a baseline older than it."""
    sqlite = {"path": str(folder / f"{port}.db")}
    if synchronous is not None:
        sqlite["synchronous"] = synchronous
    session: dict[str, Any] = {"backend": backend, "sqlite": sqlite}
    if dsn:
        session["postgres"] = {"dsn": dsn}
    config = {
        "server": {"port": port, "workers": workers},
        "session": session,
        "providers": {"fake": {"wire_api": wire, "base_url": f"{upstream}/v1"}},
        "default_provider": "fake",
    }
    path = folder / f"gateway-{port}.yaml"
    path.write_text(json.dumps(config))
    return path


def godex_config(folder: Path, port: int, upstream: str) -> Path:
    path = folder / "godex.yaml"
    path.write_text(
        f"server: {{port: {port}, host: 127.0.0.1}}\n"
        "default_provider: deepseek\n"
        'models: {aliases: {"*": deepseek/m}}\n'
        "providers:\n"
        "  deepseek:\n"
        "    spec: deepseek\n"
        "    credentials: {api_key: sk-bench}\n"
        f'    endpoint: {{base_url: "{upstream}/v1"}}\n'
        f"session: {{backend: sqlite, sqlite: {{path: {folder / 'godex.db'}}}}}\n"
        "trace: {enabled: false}\n"
        "logging: {level: error, console: {enabled: false}, file: {enabled: false}}\n"
    )
    return path


LOADS = [
    ("fresh turns, 8 connections", 8, False, False),
    ("fresh turns, 1 connection", 1, False, False),
    ("streamed turns, 8 connections", 8, True, False),
    ("chains continued at depth 50, branching, 8 connections", 8, False, True),
]


def run(
    seconds: float,
    dsn: str | None,
    godex: str | None,
    soak_seconds: float,
    workers: int = 1,
    rounds: int = 1,
    baseline: str | None = None,
    baseline_from: Path | None = None,
    agentic_api: str | None = None,
) -> str:
    """Run every load against every target; return the report (a Markdown table and notes).

    With ``rounds`` above one, each figure is the median of that many runs; the table's
    runs take turns between targets, so a slower spell of the machine falls on all.
    ``baseline``, another installation's Python (an earlier checkout's ``.venv/bin/python``),
    adds that gateway on SQLite (``full`` and ``normal``) beside this one, run from
    ``baseline_from`` (the checkout ``-m gateway`` then imports; else a scratch folder): a
    before and after in one run.
    """
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        upstream_port = free_port()
        upstream = f"http://127.0.0.1:{upstream_port}"
        upstream_pid = stack.enter_context(
            running(
                serve_command(python, upstream_port),
                f"{upstream}/v1/chat/completions",
            )
        )
        targets: dict[str, tuple[str, int]] = {}
        backends = ["memory", "sqlite", *(["postgres"] if dsn else [])]
        seeded: dict[str, tuple[str, str]] = {}
        for backend in backends:
            port = free_port()
            backend_dsn = None
            if backend == "postgres" and dsn:
                backend_dsn = stack.enter_context(throwaway_schema(dsn))
            config = gateway_config(folder, port, upstream, backend, backend_dsn)
            if backend == "sqlite":
                db = folder / f"{port}.db"
                seeded["sqlite"] = (
                    anyio.run(seed, db, 10, "short"),
                    anyio.run(seed, db, 10_000, "long"),
                )
            base = f"http://127.0.0.1:{port}"
            pid = stack.enter_context(
                running(
                    [python, "-m", "gateway", "serve", "--config", str(config)], f"{base}/healthz"
                )
            )
            targets[f"gateway ({backend})"] = (base, pid)
            if backend == "sqlite":
                port = free_port()
                config = gateway_config(folder, port, upstream, backend, None, synchronous="normal")
                base = f"http://127.0.0.1:{port}"
                command = [python, "-m", "gateway", "serve", "--config", str(config)]
                pid = stack.enter_context(running(command, f"{base}/healthz"))
                targets["gateway (sqlite, synchronous: normal)"] = (base, pid)
        if workers > 1:
            port = free_port()
            config = gateway_config(folder, port, upstream, "sqlite", None, workers)
            base = f"http://127.0.0.1:{port}"
            pid = stack.enter_context(
                running(
                    [python, "-m", "gateway", "serve", "--config", str(config)], f"{base}/healthz"
                )
            )
            targets[f"gateway (sqlite, {workers} workers)"] = (base, pid)
        if baseline is not None:
            for synchronous, name in ((None, ""), ("normal", ", synchronous: normal")):
                port = free_port()
                config = gateway_config(folder, port, upstream, "sqlite", None, 1, synchronous)
                base = f"http://127.0.0.1:{port}"
                command = [baseline, "-m", "gateway", "serve", "--config", str(config)]
                # Not from here, where ``-m gateway`` would import this checkout.
                cwd = baseline_from or folder
                pid = stack.enter_context(running(command, f"{base}/healthz", cwd=cwd))
                targets[f"baseline gateway (sqlite{name})"] = (base, pid)
        agentic_path = find_agentic_api(agentic_api)
        if agentic_path:
            port = free_port()
            config = gateway_config(folder, port, upstream, "sqlite", None, wire="responses")
            base = f"http://127.0.0.1:{port}"
            command = [python, "-m", "gateway", "serve", "--config", str(config)]
            pid = stack.enter_context(running(command, f"{base}/healthz"))
            targets[RESPONSES_WIRE] = (base, pid)
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            command = agentic_api_command(agentic_path, folder, port, upstream)
            pid = stack.enter_context(running(command, f"{base}/health", cwd=folder))
            targets["agentic-api"] = (base, pid)
        godex_path = find_godex(godex)
        if godex_path:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            pid = stack.enter_context(
                running(
                    [
                        os.path.abspath(godex_path),
                        "serve",
                        "--config",
                        str(godex_config(folder, port, upstream)),
                    ],
                    f"{base}/",
                    cwd=folder,
                )
            )
            targets["GodeX"] = (base, pid)

        pids = {name: pid for name, (_, pid) in targets.items()}
        pids["direct upstream"] = upstream_pid
        table: dict[tuple[str, str], Result] = {}

        def repeated(url: str, body: dict[str, Any], connections: int) -> Result:
            runs = [wrk(url, body, connections, seconds, folder) for _ in range(rounds)]
            return Result.median(runs)

        tips = {name: chain(base, 50) for name, (base, _) in targets.items()}
        header = ["load", "direct upstream", *targets]
        if "GodeX" in targets:
            header.append("gateway (sqlite) / GodeX")
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for label, connections, stream, chained in LOADS:
            direct_body: dict[str, Any] = {
                **DIRECT,
                "messages": chain_messages(50) if chained else DIRECT["messages"],
                "stream": stream,
            }
            requests = [("direct upstream", f"{upstream}/v1/chat/completions", direct_body)]
            for name, (base, _) in targets.items():
                body: dict[str, Any] = {**FRESH, "stream": stream}
                if chained:
                    body["previous_response_id"] = tips[name]
                requests.append((name, f"{base}/v1/responses", body))
            runs: list[list[Result]] = [[] for _ in requests]
            for _ in range(rounds):
                for index, (name, url, body) in enumerate(requests):
                    result = measured(url, body, connections, seconds, folder, pids[name])
                    runs[index].append(result)
            cells = [Result.median(each) for each in runs]
            for (name, _, _), cell in zip(requests, cells, strict=True):
                table[label, name] = cell
            row = [label, *(cell.cell() for cell in cells)]
            if "GodeX" in targets:
                sqlite = cells[1 + list(targets).index("gateway (sqlite)")]
                row.append(f"{sqlite.rate / cells[-1].rate:.2f}")
            lines.append("| " + " | ".join(row) + " |")

        notes = ["", *target_ratios(table, list(targets)), ""]
        notes.append("Latency added over direct at 1 connection, and time to first byte:")
        direct_one = repeated(f"{upstream}/v1/chat/completions", DIRECT, 1)
        direct_ttfb = first_byte_ms(
            f"{upstream}/v1/chat/completions", {**DIRECT, "stream": True}, 100
        )
        for name, (base, _) in targets.items():
            one = repeated(f"{base}/v1/responses", FRESH, 1)
            ttfb = first_byte_ms(f"{base}/v1/responses", {**FRESH, "stream": True}, 100)
            notes.append(
                f"- {name}: p50 +{one.p50_ms - direct_one.p50_ms:.2f} ms, "
                f"p99 +{one.p99_ms - direct_one.p99_ms:.2f} ms; "
                f"first byte of a stream +{ttfb - direct_ttfb:.2f} ms "
                f"({ttfb:.2f} vs {direct_ttfb:.2f})"
            )
        if "sqlite" in seeded:
            base, _ = targets["gateway (sqlite)"]
            short, long = seeded["sqlite"]
            at10 = repeated(f"{base}/v1/responses", {**FRESH, "previous_response_id": short}, 1)
            at10k = repeated(f"{base}/v1/responses", {**FRESH, "previous_response_id": long}, 1)
            direct = [
                repeated(
                    f"{upstream}/v1/chat/completions",
                    {**DIRECT, "messages": seeded_messages(depth)},
                    1,
                )
                for depth in (10, 10_000)
            ]
            added10, added10k = at10.p50_ms - direct[0].p50_ms, at10k.p50_ms - direct[1].p50_ms
            notes.append(
                f"- gateway (sqlite), continuing a chain at 1 connection: depth 10 p50 "
                f"{at10.p50_ms:.2f} ms, depth 10,000 p50 {at10k.p50_ms:.2f} ms "
                f"(+{at10k.p50_ms - at10.p50_ms:.2f} ms); the same context sent straight to "
                f"the upstream: {direct[0].p50_ms:.2f} ms and {direct[1].p50_ms:.2f} ms; "
                f"added by the gateway: {added10:.2f} ms and {added10k:.2f} ms"
            )
        if soak_seconds > 0:
            base, pid = targets["gateway (sqlite)"]
            before = rss_kib(pid)
            wrk(f"{base}/v1/responses", FRESH, 8, soak_seconds * 0.1, folder)
            early = rss_kib(pid)
            soak = wrk(f"{base}/v1/responses", FRESH, 8, soak_seconds * 0.9, folder)
            late = rss_kib(pid)
            turns = int(soak.rate * soak_seconds * 0.9)
            notes.append(
                f"- soak, gateway (sqlite): ~{turns:,} more turns; RSS {before} KiB at start, "
                f"{early} KiB after 10% of the run, {late} KiB at the end "
                f"({(late - early) / early * 100:+.1f}%)"
            )
        if not agentic_path:
            notes.append(
                "- agentic-api not found: python3.11 -m venv .cache/agentic-api && "
                ".cache/agentic-api/bin/pip install agentic-api==0.9.0"
            )
        if not godex_path:
            notes.append(
                "- GodeX not found: npm install @ahoo-wang/godex-linux-x64@1.2.0 "
                "(then --godex node_modules/.bin/godex)"
            )
        notes += sync_counts(
            {"direct upstream": (f"{upstream}/v1/chat/completions", upstream_pid), **targets},
            {"direct upstream": DIRECT, **dict.fromkeys(targets, FRESH)},
            seconds,
            folder,
            dsn if "gateway (postgres)" in targets else None,
        )
        setting = f"{seconds:g} s per load, wrk -t1, {os.cpu_count()} cores"
        if rounds > 1:
            setting += f", medians of {rounds} rounds"
        p50, p99 = sync_latency_ms(folder)
        setting += f"; this disk's 4 KiB write + fdatasync: p50 {p50:.2f} ms, p99 {p99:.2f} ms"
        return "\n".join([setting, *lines, *notes])


RESPONSES_WIRE = "gateway (sqlite, responses wire)"
FRESH_LOAD, STREAMED_LOAD = LOADS[0][0], LOADS[2][0]


def target_ratios(table: dict[tuple[str, str], Result], targets: list[str]) -> list[str]:
    """The ratios the targets name: a streamed turn's CPU over a fresh one's (the same
    answer), this gateway's CPU per request over the baseline's, and the gateway on the
    ``responses`` wire against agentic-api."""

    def cpu(load: str, name: str) -> float:
        return table[load, name].cpu_us or float("nan")

    lines = ["Ratios (CPU per request from /proc):"]
    for name in targets:
        if name.startswith(("gateway", "baseline")):
            ratio = cpu(STREAMED_LOAD, name) / cpu(FRESH_LOAD, name)
            lines.append(f"- {name}: CPU of a streamed turn / a fresh turn {ratio:.2f}")
    for this, before in (
        ("gateway (sqlite)", "baseline gateway (sqlite)"),
        ("gateway (sqlite, synchronous: normal)", "baseline gateway (sqlite, synchronous: normal)"),
    ):
        if before in targets:
            figures = ", ".join(
                f"{label.split(',')[0]} {cpu(label, this) / cpu(label, before):.2f}"
                for label, *_ in LOADS
            )
            lines.append(f"- {this} / baseline, CPU per request: {figures}")
    if "agentic-api" in targets:
        ours, peer = RESPONSES_WIRE, "agentic-api"
        figures = ", ".join(
            f"{label.split(',')[0]} {table[label, ours].rate / table[label, peer].rate:.2f}"
            f" (CPU {cpu(label, ours) / cpu(label, peer):.2f})"
            for label, *_ in LOADS
        )
        lines.append(f"- {RESPONSES_WIRE} / agentic-api, req/s (and CPU per request): {figures}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument(
        "--postgres", metavar="DSN", help="also measure PostgreSQL (throwaway schema)"
    )
    parser.add_argument("--godex", metavar="PATH", help="the godex binary")
    parser.add_argument("--agentic-api", metavar="PATH", help="agentic-api's agentic-server")
    parser.add_argument("--soak-seconds", type=float, default=0, help="RSS over a long run")
    parser.add_argument("--workers", type=int, default=1, help="also a gateway with N workers")
    parser.add_argument("--rounds", type=int, default=1, help="report medians of N runs")
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="also a gateway run by this Python (another checkout's venv), for before/after",
    )
    parser.add_argument("--baseline-from", metavar="DIR", type=Path, help="where it runs from")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("bench.compare needs wrk: apt-get install wrk")
    print(
        run(
            args.seconds,
            args.postgres,
            args.godex,
            args.soak_seconds,
            args.workers,
            args.rounds,
            args.baseline,
            args.baseline_from,
            args.agentic_api,
        )
    )


if __name__ == "__main__":
    main()
