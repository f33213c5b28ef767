"""The gateway's runtime without HTTP: a configuration started, turns run on it directly, and
everything it started stopped at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.api.request_body import parse_create_body
from gateway.observability.metrics import Metrics
from gateway.turn.runtime import Runtime
from session import MemoryStore

from .conftest import gateway_config
from .fake_upstream import FakeUpstream

pytestmark = [pytest.mark.api, pytest.mark.anyio]


_POOL = b'gateway_upstream_connections_in_use{provider="fake-chat"}'


def _body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


async def test_a_chain_runs_on_the_runtime_and_is_stored(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, url = fake_upstream
    config = gateway_config(url, tmp_path / "runtime.db")
    metrics = Metrics()
    async with Runtime.started(config, metrics) as runtime:
        assert set(runtime.clients) == {"fake-chat", "fake-responses"}  # not echo's
        first = await runtime.service.respond(
            parse_create_body(_body(model="chat-model", input="Hello")), "default"
        )
        second = await runtime.service.respond(
            parse_create_body(
                _body(model="chat-model", input="Again", previous_response_id=first["id"])
            ),
            "default",
        )
        stored = await runtime.store.get("default", second["id"])
        assert _POOL in metrics.render()[0]
    assert stored.previous_response_id == first["id"]
    sent = [m["content"] for m in fake.last["messages"]]
    assert sent[0] == "Hello" and sent[-1] == "Again" and len(sent) == 3
    assert _POOL not in metrics.render()[0]  # the pools' collector went with the runtime


async def test_the_runtime_leaves_a_store_it_was_given_open(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:9/unused", tmp_path / "unused.db")
    store = MemoryStore()
    async with Runtime.started(config, Metrics(), store=store) as runtime:
        answer = await runtime.service.respond(
            parse_create_body(_body(model="echo", input="ping")), "default"
        )
    assert (await store.get("default", answer["id"])).id == answer["id"]
