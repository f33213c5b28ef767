"""What traces cost a turn: the gateway with tracing off, on (sampling 1.0) and on with its
collector down.

    python -m bench.tracing [--seconds 5] [--rounds 1]

One fast fake Chat Completions upstream, an OTLP/HTTP sink that answers every export, and
three gateways (memory store, default settings, ``store: false`` turns) as processes of their
own: ``observability`` unset; ``otlp`` to the sink with ``sampling_ratio: 1.0``; ``otlp`` to a
port that refuses connections. wrk (one thread) posts the same one-message turn, non-streamed
and streamed, to each; each row gives p50 and p99 at 1 connection, requests/s at 8, and the
p50 against tracing off.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .compare import gateway_config
from .fake_chat import serve_command
from .load import Result, free_port, running, wrk

HEADER = ["tracing", "stream", "p50 ms (1 conn)", "p99 ms (1 conn)", "req/s (8 conns)", "p50 / off"]
TARGETS = ("off", "on, sampling 1.0", "on, collector down")


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def otlp_sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint that takes every export (and reads none)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _traced_config(folder: Path, port: int, upstream: str, endpoint: str | None) -> Path:
    path = gateway_config(folder, port, upstream, "memory", None)
    if endpoint is not None:
        config = json.loads(path.read_text())
        config["observability"] = {"otlp": {"endpoint": endpoint, "sampling_ratio": 1.0}}
        path.write_text(json.dumps(config))
    return path


def run(seconds: float, rounds: int = 1) -> str:
    """Measure each gateway, streamed and not; return the report (a setting line, a table)."""
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        upstream_port = free_port()
        upstream = f"http://127.0.0.1:{upstream_port}"
        stack.enter_context(
            running(serve_command(sys.executable, upstream_port), f"{upstream}/v1/chat/completions")
        )
        sink = stack.enter_context(otlp_sink())
        down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        gateways = []
        for endpoint in (None, sink, down):
            port = free_port()
            config = _traced_config(folder, port, upstream, endpoint)
            command = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
            stack.enter_context(running(command, f"http://127.0.0.1:{port}/healthz"))
            gateways.append(f"http://127.0.0.1:{port}/v1/responses")
        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        for stream in (False, True):
            body = {"model": "m", "input": "hello there", "store": False, "stream": stream}
            ones: list[list[Result]] = [[] for _ in gateways]
            eights: list[list[Result]] = [[] for _ in gateways]
            for _ in range(rounds):
                for index, url in enumerate(gateways):
                    ones[index].append(wrk(url, body, 1, seconds, folder))
                    eights[index].append(wrk(url, body, 8, seconds, folder))
            one = [Result.median(each) for each in ones]
            eight = [Result.median(each) for each in eights]
            for index, name in enumerate(TARGETS):
                cells = [
                    name,
                    "yes" if stream else "no",
                    f"{one[index].p50_ms:.2f}",
                    f"{one[index].p99_ms:.2f}",
                    f"{eight[index].rate:,.0f}",
                    f"{one[index].p50_ms / one[0].p50_ms:.2f}x",
                ]
                errors = one[index].errors + eight[index].errors
                if errors:
                    cells[0] += f" ({errors} errors)"
                lines.append("| " + " | ".join(cells) + " |")
        setting = f"{max(1, round(seconds))} s per load, wrk -t1, {os.cpu_count()} cores"
        if rounds > 1:
            setting += f", medians of {rounds} rounds"
        return "\n".join([setting, "", *lines])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5, help="seconds per load")
    parser.add_argument("--rounds", type=int, default=1, help="report medians of N runs")
    options = parser.parse_args(argv)
    print(run(options.seconds, options.rounds))


if __name__ == "__main__":
    main()
