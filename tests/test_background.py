"""``background: true``: queued at once, run by the gateway, polled, cancelled."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from gateway import create_app, load_config
from gateway.turn.upkeep import STALE_ERROR
from session import build_store

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply, sent_messages
from .servers import serve, start_instance

pytestmark = [pytest.mark.api]

# The turn's lifecycle is the gateway's own: alike whichever wire the provider speaks.
WIRES = pytest.mark.parametrize("model", ["chat-model", "resp-model"])
INPUT_TOKENS = {"chat-model": 11, "resp-model": 5}  # what the fake reports on each wire


def poll(client: openai.OpenAI, response_id: str, until: set[str]) -> Any:
    """The response once its status is in ``until`` (bounded wait, not a speed check)."""
    deadline = time.monotonic() + 30
    while True:
        response = client.responses.retrieve(response_id)
        if response.status in until:
            return response
        assert time.monotonic() < deadline, response.status
        time.sleep(0.02)


def wait_for_upstream(fake: FakeUpstream, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(fake.requests) < count:
        assert time.monotonic() < deadline, "the upstream was never called"
        time.sleep(0.01)


@WIRES
def test_a_background_response_is_queued_then_completes(gateway: Gateway, model: str) -> None:
    client = gateway.client()
    gate = threading.Event()
    gateway.fake.script(Reply(text="done in the background", gate=gate))
    queued = client.responses.create(model=model, input="work", background=True)
    assert queued.status == "queued" and queued.background is True and queued.output == []
    wait_for_upstream(gateway.fake, 1)
    assert client.responses.retrieve(queued.id).status == "in_progress"
    gate.set()
    done = poll(client, queued.id, {"completed"})
    assert done.output_text == "done in the background" and done.background is True
    assert done.usage is not None and done.usage.input_tokens == INPUT_TOKENS[model]
    follow = client.responses.create(model=model, input="next", previous_response_id=done.id)
    assert [role for role, _ in sent_messages(gateway.fake.last)] == ["user", "assistant", "user"]
    assert follow.status == "completed"


@WIRES
def test_cancelling_a_running_response_stores_it_cancelled(gateway: Gateway, model: str) -> None:
    client = gateway.client()
    gate = threading.Event()
    gateway.fake.script(Reply(text="never seen", gate=gate))
    try:
        queued = client.responses.create(model=model, input="slow", background=True)
        wait_for_upstream(gateway.fake, 1)
        cancelled = client.responses.cancel(queued.id)
        assert cancelled.status == "cancelled" and cancelled.output == []
    finally:
        gate.set()
    assert client.responses.retrieve(queued.id).status == "cancelled"
    assert client.responses.cancel(queued.id).status == "cancelled"  # unchanged
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="echo", input="x", previous_response_id=queued.id)
    assert refused.value.code == "turn_not_continuable"


def test_what_cannot_be_cancelled(gateway: Gateway) -> None:
    client = gateway.client()
    plain = client.responses.create(model="echo", input="in the foreground")
    with pytest.raises(openai.BadRequestError, match="background"):
        client.responses.cancel(plain.id)
    finished = client.responses.create(model="echo", input="quick", background=True)
    done = poll(client, finished.id, {"completed"})
    assert client.responses.cancel(finished.id).model_dump() == done.model_dump()
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_missing")
    refused = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": "echo", "input": "x", "background": True, "store": False},
    )
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "background"


@WIRES
def test_a_background_failure_is_stored_failed(gateway: Gateway, model: str) -> None:
    client = gateway.client()
    gateway.fake.script(Reply(status=500, error_body={"error": {"message": "overloaded"}}))
    queued = client.responses.create(model=model, input="x", background=True)
    failed = poll(client, queued.id, {"failed"})
    assert failed.error is not None and failed.error.code == "server_error"


@WIRES
def test_a_background_stream_says_it_is_background(gateway: Gateway, model: str) -> None:
    client = gateway.client()
    events = list(client.responses.create(model=model, input="x", background=True, stream=True))
    assert events[0].type == "response.created" and events[0].response.background is True
    assert events[-1].type == "response.completed"
    assert client.responses.retrieve(events[-1].response.id).background is True


def test_another_instance_can_cancel_on_a_shared_store(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    postgres_dsn: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.turn.background")
    fake = fake_upstream[0]
    session = {"backend": "postgres", "postgres": {"dsn": postgres_dsn}}
    config = gateway_config(fake_upstream[1], tmp_path / "unused.db", session=session)
    gate = threading.Event()
    fake.script(Reply(text="too late", gate=gate))
    with ExitStack() as running:
        first, second = (running.enter_context(serve(create_app(config))) for _ in range(2))
        running.callback(gate.set)
        one = openai.OpenAI(base_url=f"{first}/v1", api_key="k", max_retries=0)
        two = openai.OpenAI(base_url=f"{second}/v1", api_key="k", max_retries=0)
        running.callback(one.close)
        running.callback(two.close)
        queued = one.responses.create(model="chat-model", input="x", background=True)
        wait_for_upstream(fake, 1)
        assert two.responses.cancel(queued.id).status == "cancelled"
        gate.set()  # the first instance's answer arrives; its save is refused
        deadline = time.monotonic() + 30
        while "finished elsewhere" not in caplog.text:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert one.responses.retrieve(queued.id).status == "cancelled"


@pytest.mark.system
def test_a_background_turn_whose_instance_died_is_failed_by_the_sweep(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, upstream_url = fake_upstream
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
                "providers": {
                    "fake": {"wire_api": "chat_completions", "base_url": f"{upstream_url}/v1"}
                },
                "default_provider": "fake",
            }
        )
    )
    gate = threading.Event()
    fake.script(Reply(text="never", gate=gate))
    process, url = start_instance(config)
    try:
        body = {"model": "m", "input": "x", "background": True}
        queued = httpx.post(f"{url}/v1/responses", json=body).json()
        wait_for_upstream(fake, 1)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        gate.set()
        if process.poll() is None:
            process.kill()

    async def sweep() -> None:  # what the sweep does once the turn is past every deadline
        store = build_store(load_config(config).session)
        try:
            assert (await store.get("default", queued["id"])).status == "in_progress"
            assert await store.fail_stale(time.time() + 1, STALE_ERROR) == 1
        finally:
            await store.close()

    asyncio.run(sweep())
    restarted, url = start_instance(config)
    try:
        failed = httpx.get(f"{url}/v1/responses/{queued['id']}").json()
    finally:
        restarted.terminate()
        restarted.wait(timeout=30)
    assert failed["status"] == "failed" and failed["error"] == STALE_ERROR
