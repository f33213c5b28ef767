"""Prompt-cache hit rates of a chain routed over two deployments and two keys: with
routing affinity, without it, and with the chain's deployment failing midway.

    python -m bench.affinity [--turns 20]

The upstream (:mod:`bench.caching_upstream`) is a fake Responses API that keeps a prompt
cache per key and model: its usage counts as cached only a prefix that key and model were
sent before. Each run is one chain of ``--turns`` turns (the same instructions, a new user
message each turn); the table gives its input tokens, the cached ones, the hit rate
(cached / input), and how many turns changed deployment or key. In the failover run the
deployment that served the middle turn starts failing (HTTP 500) for good.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp

from gateway import create_app, parse_config

from .caching_upstream import CachingUpstream

KEYS = ["sk-bench-key-zero-000000", "sk-bench-key-one-111111"]
INSTRUCTIONS = "You are a careful coding agent. " * 40


def gateway_config(upstream: str, db: Path, *, affinity: bool = True) -> dict[str, Any]:
    """A model on two deployments of one provider with two keys: four places to go."""
    provider = {
        "wire_api": "responses",
        "base_url": f"{upstream}/v1",
        "api_keys": [{"key": key} for key in KEYS],
    }
    return {
        "session": {"backend": "sqlite", "sqlite": {"path": str(db)}},
        "providers": {"east": provider},
        "models": {
            "agent": {
                "deployments": [
                    {"provider": "east", "upstream_model": "model-a"},
                    {"provider": "east", "upstream_model": "model-b"},
                ],
            }
        },
        "routing": {
            "affinity": affinity,
            "cooldown": {"allowed_fails": 1, "seconds": 600, "max_seconds": 600},
        },
    }


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port, in a thread, until the block ends."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@dataclass
class Turn:
    """One turn as the upstream saw it: where it went, its input and cached tokens."""

    target: tuple[str, str]  # (key, model)
    input_tokens: int
    cached_tokens: int
    response_id: str


def chain(
    url: str, upstream: CachingUpstream, turns: int, fail_at: int | None = None
) -> list[Turn]:
    """Run one chain of ``turns`` turns; from turn ``fail_at`` (0-based) on, the model
    that served the turn before it fails."""
    done: list[Turn] = []
    for number in range(turns):
        if number == fail_at and done:
            upstream.failing.add(done[-1].target[1])
        previous = done[-1].response_id if done else None
        done.append(chain_from(url, upstream, previous, number))
    return done


def chain_from(url: str, upstream: CachingUpstream, previous: str | None, number: int = 0) -> Turn:
    """One turn of the chain that ends at ``previous`` (a new chain if ``None``)."""
    body: dict[str, Any] = {
        "model": "agent",
        "instructions": INSTRUCTIONS,
        "input": f"step {number}: read the next file and say what it does",
    }
    if previous is not None:
        body["previous_response_id"] = previous
    answer = httpx.post(f"{url}/v1/responses", json=body, timeout=60)
    answer.raise_for_status()
    response = answer.json()
    usage = response["usage"]
    account, sent = upstream.requests[-1]
    return Turn(
        (account, sent["model"]),
        usage["input_tokens"],
        usage["input_tokens_details"]["cached_tokens"],
        response["id"],
    )


def hit_rate(turns: list[Turn]) -> float:
    total = sum(turn.input_tokens for turn in turns)
    return sum(turn.cached_tokens for turn in turns) / total if total else 0.0


def moves(turns: list[Turn]) -> int:
    return sum(1 for a, b in itertools.pairwise(turns) if a.target != b.target)


def measure(turns: int = 20) -> dict[str, list[Turn]]:
    """Each run's turns: ``affinity``, ``no affinity``, ``failover`` (affinity on)."""
    runs: dict[str, list[Turn]] = {}
    upstream = CachingUpstream()
    upstream.reasoning = False  # else the reasoning's account binds the key regardless
    with tempfile.TemporaryDirectory() as folder, serving(upstream.app) as upstream_url:
        for name, affinity, fail_at in (
            ("affinity", True, None),
            ("no affinity", False, None),
            ("failover", True, turns // 2),
        ):
            upstream.reset()
            raw = gateway_config(upstream_url, Path(folder) / f"{len(runs)}.db", affinity=affinity)
            with serving(create_app(parse_config(raw, env={}))) as url:
                runs[name] = chain(url, upstream, turns, fail_at)
    return runs


def table(runs: dict[str, list[Turn]]) -> str:
    lines = [
        "| run | turns | input tokens | cached tokens | hit rate | moves |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, turns in runs.items():
        total = sum(t.input_tokens for t in turns)
        cached = sum(t.cached_tokens for t in turns)
        lines.append(
            f"| {name} | {len(turns)} | {total:,} | {cached:,} | "
            f"{hit_rate(turns):.1%} | {moves(turns)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    print(table(measure(args.turns)))


if __name__ == "__main__":
    main()
