"""Instances prove they are alive: the turns of one that died fail within its heartbeat timeout.

Heartbeats here come every 0.2 s and go stale after 1 s; every deadline of the turns
themselves is far longer, so only the heartbeat can fail them.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway import ConfigError, create_app, load_config, parse_config
from gateway.turn.upkeep import STALE_ERROR

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve, start_instance

pytestmark = [pytest.mark.system]


@pytest.fixture(params=["sqlite", "postgres"])
def config_path(
    request: Any, tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> Iterator[Path]:
    """A configuration two instances share: one store, short heartbeats."""
    upstream_url = fake_upstream[1]
    session: dict[str, Any] = {"backend": request.param, "sqlite": {"path": str(tmp_path / "s.db")}}
    if request.param == "postgres":
        session["postgres"] = {"dsn": request.getfixturevalue("postgres_dsn")}
    path = tmp_path / "config.yaml"
    raw = {
        "server": {"heartbeat_seconds": 0.2, "heartbeat_timeout_seconds": 1},
        "session": session,
        "providers": {
            "fake": {
                "wire_api": "chat_completions",
                "base_url": f"{upstream_url}/v1",
                "api_key": UPSTREAM_KEY,
            }
        },
        "default_provider": "fake",
    }
    path.write_text(yaml.safe_dump(raw))
    yield path


def until(condition: Any, what: str) -> None:
    """Wait for ``condition()`` (a bounded wait, not a speed check)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def start_background_stream(url: str) -> str:
    """Start a background stream, read its first events, hang up; return its id."""
    body = {"model": "m", "input": "hangs", "background": True, "stream": True}
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "response.in_progress":
                    response_id: str = event["response"]["id"]
                    return response_id
    raise AssertionError("the stream ended before it started")


def resumed_events(url: str, response_id: str) -> list[dict[str, Any]]:
    params = {"stream": "true", "starting_after": "-1"}
    with httpx.stream(
        "GET", f"{url}/v1/responses/{response_id}", params=params, timeout=30
    ) as response:
        assert response.status_code == 200
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def test_a_killed_instances_stream_fails_on_the_other_instance(
    config_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake = fake_upstream[0]
    gate = threading.Event()
    # The killed instance's stream hangs; so does the survivor's own background turn.
    fake.script(Reply(text="never sent", delay=3), Reply(text="still running", gate=gate))
    survivor_config = load_config(config_path)
    process, doomed = start_instance(config_path)
    try:
        with serve(create_app(survivor_config)) as survivor:
            orphan = start_background_stream(doomed)
            own = httpx.post(
                f"{survivor}/v1/responses",
                json={"model": "m", "input": "slow", "background": True},
                timeout=30,
            ).json()["id"]
            until(lambda: len(fake.requests) == 2, "both turns reached the upstream")
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)

            def status(response_id: str) -> Any:
                return httpx.get(f"{survivor}/v1/responses/{response_id}", timeout=30).json()

            until(lambda: status(orphan)["status"] == "failed", "the orphan was failed")
            assert status(orphan)["error"] == STALE_ERROR
            assert status(own)["status"] == "in_progress"  # its instance is alive
            events = resumed_events(survivor, orphan)
            assert events[-1]["type"] == "response.failed"
            assert events[-1]["response"]["status"] == "failed"
            numbers = [event["sequence_number"] for event in events]
            assert numbers == list(range(len(numbers)))
            gate.set()
            until(lambda: status(own)["status"] == "completed", "the survivor's turn completed")
    finally:
        gate.set()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def test_heartbeat_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="more than twice heartbeat_seconds"):
        parse_config({"server": {"heartbeat_seconds": 10, "heartbeat_timeout_seconds": 15}})
