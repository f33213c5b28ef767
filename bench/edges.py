"""The latency each inbound API adds: the fake upstream alone beside the gateway's edges.

    python -m bench.edges [--seconds 5] [--rounds 1]

One fast fake upstream (Chat Completions and Messages) and one gateway (memory store,
default settings, access log on) run as processes of their own; wrk (one thread) posts the
same one-message conversation, non-streamed and streamed, to the upstream directly and to the
gateway: ``/v1/responses`` (``store: false``), ``/v1/chat/completions`` and ``/v1/messages``
to a model on the Chat Completions wire, then ``/v1/messages`` (the request sent to Claude as
it came) and ``/v1/chat/completions`` (translated) to a model on the Messages wire. Every
gateway row runs one stateless turn. Each row gives p50 and p99 at 1 connection, requests/s
at 8 connections, and the p50 added over the direct call to the same upstream API of the
same kind (streamed or not) in milliseconds and as a ratio. A streamed request's latency is
the whole stream's, up to its last byte.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .compare import gateway_config
from .fake_chat import WORDS, serve_command
from .load import Result, free_port, running, wrk

MESSAGES = [{"role": "user", "content": "hello there"}]
CLAUDE = "claude-m"  # the gateway's model on the Messages wire
REPLY = "".join(WORDS)
HEADER = [
    "target",
    "stream",
    "p50 ms (1 conn)",
    "p99 ms (1 conn)",
    "req/s (8 conns)",
    "added p50 ms",
    "p50 / direct",
    "errors",
]


@dataclass(frozen=True)
class Edge:
    """One row's target: a path on the upstream or the gateway, and its request body."""

    name: str
    on_gateway: bool
    path: str
    body: dict[str, Any]
    last_event: str  # what a whole stream of this API ends with
    direct: int = 0  # the index of the direct row this one is set beside


EDGES = [
    Edge(
        "direct upstream (chat completions)",
        False,
        "/v1/chat/completions",
        {"model": "m", "messages": MESSAGES},
        "[DONE]",
    ),
    Edge(
        "gateway /v1/responses (store false)",
        True,
        "/v1/responses",
        {"model": "m", "input": "hello there", "store": False},
        "response.completed",
    ),
    Edge(
        "gateway /v1/chat/completions",
        True,
        "/v1/chat/completions",
        {"model": "m", "messages": MESSAGES},
        "[DONE]",
    ),
    Edge(
        "gateway /v1/messages",
        True,
        "/v1/messages",
        {"model": "m", "max_tokens": 256, "messages": MESSAGES},
        "message_stop",
    ),
    Edge(
        "direct upstream (messages)",
        False,
        "/v1/messages",
        {"model": "m", "max_tokens": 256, "messages": MESSAGES},
        "message_stop",
        direct=4,
    ),
    Edge(
        "gateway /v1/messages to Claude (as sent)",
        True,
        "/v1/messages",
        {"model": CLAUDE, "max_tokens": 256, "messages": MESSAGES},
        "message_stop",
        direct=4,
    ),
    Edge(
        "gateway /v1/chat/completions to Claude",
        True,
        "/v1/chat/completions",
        {"model": CLAUDE, "messages": MESSAGES},
        "[DONE]",
        direct=4,
    ),
]


def _with_claude(config: Path, upstream: str) -> None:
    """Add the model on the Messages wire to the gateway's configuration."""
    settings = json.loads(config.read_text())
    settings["providers"]["claude"] = {
        "wire_api": "anthropic",
        "base_url": upstream,
        "api_key": "sk-bench",
    }
    settings["models"] = {CLAUDE: {"provider": "claude", "upstream_model": "m"}}
    config.write_text(json.dumps(settings))


def check_answer(url: str, edge: Edge, body: dict[str, Any]) -> None:
    """Fail before any load if a target does not answer with the upstream's whole reply."""
    response = httpx.post(url, json=body, timeout=30)
    text = response.text
    whole = edge.last_event in text if body["stream"] else REPLY in text
    if response.status_code != 200 or "lazy" not in text or not whole:
        raise RuntimeError(f"{url} answered {response.status_code}: {text[:300]}")


def _row(edge: Edge, stream: bool, one: Result, eight: Result, direct: Result) -> str:
    added = one.p50_ms - direct.p50_ms
    cells = [
        edge.name,
        "yes" if stream else "no",
        f"{one.p50_ms:.2f}",
        f"{one.p99_ms:.2f}",
        f"{eight.rate:,.0f}",
        "-" if not edge.on_gateway else f"{added:+.2f}",
        "-" if not edge.on_gateway else f"{one.p50_ms / direct.p50_ms:.2f}x",
        str(one.errors + eight.errors),
    ]
    return "| " + " | ".join(cells) + " |"


def run(seconds: float, rounds: int = 1) -> str:
    """Measure every edge, streamed and not; return the report (a setting line and a table).

    With ``rounds`` above one, each figure is the median of that many runs, taken in turns
    between targets so that a slower spell of the machine falls on all of them.
    """
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        upstream_port = free_port()
        upstream = f"http://127.0.0.1:{upstream_port}"
        stack.enter_context(
            running(serve_command(sys.executable, upstream_port), f"{upstream}/v1/chat/completions")
        )
        port = free_port()
        gateway = f"http://127.0.0.1:{port}"
        config = gateway_config(folder, port, upstream, "memory", None)
        _with_claude(config, upstream)
        command = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
        stack.enter_context(running(command, f"{gateway}/healthz"))

        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        for stream in (False, True):
            targets = [
                (
                    f"{gateway if edge.on_gateway else upstream}{edge.path}",
                    {**edge.body, "stream": stream},
                )
                for edge in EDGES
            ]
            for edge, (url, body) in zip(EDGES, targets, strict=True):
                check_answer(url, edge, body)
            ones: list[list[Result]] = [[] for _ in targets]
            eights: list[list[Result]] = [[] for _ in targets]
            for _ in range(rounds):
                for index, (url, body) in enumerate(targets):
                    ones[index].append(wrk(url, body, 1, seconds, folder))
                    eights[index].append(wrk(url, body, 8, seconds, folder))
            one = [Result.median(each) for each in ones]
            eight = [Result.median(each) for each in eights]
            for index, edge in enumerate(EDGES):
                lines.append(_row(edge, stream, one[index], eight[index], one[edge.direct]))
        setting = f"{max(1, round(seconds))} s per load, wrk -t1, {os.cpu_count()} cores"
        if rounds > 1:
            setting += f", medians of {rounds} rounds"
        return "\n".join([setting, "", *lines])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5, help="seconds per load")
    parser.add_argument("--rounds", type=int, default=1, help="report medians of N runs")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        sys.exit("bench.edges needs wrk: apt-get install wrk")
    print(run(args.seconds, args.rounds))


if __name__ == "__main__":
    main()
