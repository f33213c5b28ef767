"""Property-based fuzzing of WebSocket mode on ``/v1/responses``: whatever frames a client
sends (JSON or not, text or binary, ``response.create`` on any ``stream_id`` lane), each
gets one answer that ends it (a response's end, or OpenAI's ``error`` frame with a 4xx), no
error is logged, no traceback reaches the client, and the socket then serves a plain turn.

    GATEWAY_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/test_fuzz_websocket.py   # a longer run
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from gateway import create_app

from .conftest import ErrorLog, gateway_config
from .fake_upstream import FakeUpstream
from .fuzz_bodies import encode
from .fuzz_file_bodies import FRAMES
from .servers import serve
from .test_fuzz import EXAMPLES, FUZZ, TRACEBACK, sendable
from .test_websocket import TERMINAL, ws_url

# A longer run is given time in proportion (pytest-timeout's default is for the default run).
pytestmark = [pytest.mark.api, pytest.mark.timeout(max(120, EXAMPLES))]

ERROR_FIELDS = {"message", "type", "param", "code"}


@pytest.fixture(scope="module")
def url(
    fake_upstream: tuple[FakeUpstream, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    db: Path = tmp_path_factory.mktemp("fuzz-websocket") / "s.db"
    with serve(create_app(gateway_config(fake_upstream[1], db))) as gateway_url:
        yield ws_url(gateway_url)


def answered(frame: Any) -> bool:
    """Whether the gateway answers ``frame`` (it takes Codex's acknowledgements silently)."""
    if isinstance(frame, dict):
        return frame.get("type") != "response.processed"
    return True


def sent(socket: Connection, frame: Any, latest: str | None) -> None:
    """Send ``frame``: text as it is, bytes as a binary frame, anything else as JSON (with
    ``<latest>`` standing for the last response completed on this socket)."""
    if isinstance(frame, bytes):
        socket.send(frame)
    elif isinstance(frame, str):
        socket.send(sendable(frame))
    else:
        if isinstance(frame, dict) and frame.get("previous_response_id") == "<latest>":
            frame = {**frame, "previous_response_id": latest or "resp_x"}
        socket.send(encode(frame).decode())


def ends(socket: Connection, count: int, errors: ErrorLog) -> list[dict[str, Any]]:
    """Read events until ``count`` responses (or refusals) have ended; each checked."""
    ended: list[dict[str, Any]] = []
    while len(ended) < count:
        raw = socket.recv(timeout=30)
        assert isinstance(raw, str) and TRACEBACK not in raw
        event = json.loads(raw)
        assert not errors.records, [r.getMessage() for r in errors.records]
        if event["type"] == "error":
            assert 400 <= event["status"] < 500, event
            assert set(event["error"]) == ERROR_FIELDS, event
        if event["type"] in TERMINAL:
            ended.append(event)
    return ended


@FUZZ
@example(frames=[b"\xff\xfe"], burst=False)
@example(frames=['{"type": "response.create", "stream_id": ""}'], burst=False)
@example(frames=[{"type": "response.create", "model": "echo", "input": "a", "stream_id": 7}],
         burst=False)  # fmt: skip
@example(frames=[{"type": "response.create", "model": "echo", "input": "a", "generate": False,
                  "stream_id": "a"}, {"type": "response.create", "model": "echo", "input": "b",
                  "previous_response_id": "<latest>", "stream_id": "b"}], burst=False)  # fmt: skip
@given(frames=st.lists(FRAMES, min_size=1, max_size=4), burst=st.booleans())
def test_websocket_frames(url: str, errors: ErrorLog, frames: list[Any], burst: bool) -> None:
    latest: str | None = None
    with connect(url, max_size=None) as socket:
        if burst:  # every frame at once: named lanes run side by side
            for frame in frames:
                sent(socket, frame, latest)
            ends(socket, sum(answered(f) for f in frames), errors)
        else:
            for frame in frames:
                sent(socket, frame, latest)
                if not answered(frame):
                    continue
                [end] = ends(socket, 1, errors)
                if end["type"] == "response.completed":
                    latest = end["response"]["id"]
        plain = {"type": "response.create", "model": "echo", "input": "still there?"}
        socket.send(json.dumps(plain))
        [end] = ends(socket, 1, errors)
        assert end["type"] == "response.completed", end
        assert "stream_id" not in end
