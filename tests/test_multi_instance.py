"""Several gateway processes sharing one store: any instance continues any chain."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from openai import OpenAI

from .fake_upstream import UPSTREAM_KEY, FakeUpstream
from .servers import start_instance

pytestmark = [pytest.mark.system]


@pytest.fixture(params=["sqlite", "postgres"])
def instances(
    request: Any, tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> Iterator[tuple[OpenAI, OpenAI, FakeUpstream]]:
    fake, upstream_url = fake_upstream
    session: dict[str, Any] = {"backend": request.param, "sqlite": {"path": str(tmp_path / "s.db")}}
    if request.param == "postgres":
        session["postgres"] = {"dsn": request.getfixturevalue("postgres_dsn")}
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
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
        )
    )
    processes = [start_instance(config) for _ in range(2)]
    clients = [
        OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, _strict_response_validation=True)
        for _, url in processes
    ]
    try:
        yield clients[0], clients[1], fake
    finally:
        for client in clients:
            client.close()
        for process, _ in processes:
            process.terminate()
            process.wait(timeout=30)


def test_a_chain_alternates_between_instances(
    instances: tuple[OpenAI, OpenAI, FakeUpstream],
) -> None:
    a, b, fake = instances
    previous = None
    for n in range(6):
        client = a if n % 2 == 0 else b
        previous = client.responses.create(
            model="m", input=f"turn {n}", previous_response_id=previous
        ).id
    users = [m["content"] for m in fake.last["messages"] if m["role"] == "user"]
    assert users == [f"turn {n}" for n in range(6)]


def test_a_streamed_turn_on_one_is_continued_on_the_other(
    instances: tuple[OpenAI, OpenAI, FakeUpstream],
) -> None:
    a, b, fake = instances
    events = list(a.responses.create(model="m", input="streamed on a", stream=True))
    streamed = events[-1].response  # type: ignore[union-attr]
    assert events[-1].type == "response.completed"
    b.responses.create(model="m", input="continued on b", previous_response_id=streamed.id)
    contents = [m["content"] for m in fake.last["messages"]]
    assert contents == ["streamed on a", "reply to: streamed on a", "continued on b"]


def test_concurrent_branching_from_both_instances_loses_nothing(
    instances: tuple[OpenAI, OpenAI, FakeUpstream],
) -> None:
    a, b, _ = instances
    root = a.responses.create(model="m", input="root")

    def branch(n: int) -> str:
        client = a if n % 2 else b
        return client.responses.create(model="m", input=f"b{n}", previous_response_id=root.id).id

    with ThreadPoolExecutor(max_workers=8) as pool:
        children = list(pool.map(branch, range(24)))
    assert len(set(children)) == 24
    for n, child in enumerate(children):
        for client in (a, b):
            fetched = client.responses.retrieve(child)
            assert fetched.previous_response_id == root.id
            assert fetched.output_text == f"reply to: b{n}"


def test_concurrent_turns_on_one_conversation_from_both_instances(
    instances: tuple[OpenAI, OpenAI, FakeUpstream],
) -> None:
    a, b, _ = instances
    conversation = a.conversations.create()

    def turn(n: int) -> None:
        client = a if n % 2 else b
        client.responses.create(model="m", input=f"q{n}", conversation=conversation.id)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(turn, range(16)))
    items = list(b.conversations.items.list(conversation.id, order="asc", limit=100))
    texts = [item.content[0].text for item in items]  # type: ignore[union-attr]
    assert sorted(texts[::2]) == sorted(f"q{n}" for n in range(16))
    for question, answer in zip(texts[::2], texts[1::2], strict=True):
        assert answer == f"reply to: {question}"  # each turn's items stay together
