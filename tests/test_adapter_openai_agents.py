"""The OpenAI Agents SDK Session over the agent Store: the behaviour the SDK's own tests ask
of its SQLiteSession, rewritten for this adapter, on every backend and through a gateway
process; runs that resume on another process, an approval included."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session, SessionSettings

from session.adapters.openai_agents import StoreSession

from .adapter_targets import API_KEY, Target
from .agents_approval import ScriptedModel, text_message
from .servers import REPO

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


def session(target: Target, session_id: str = "s1", **options: Any) -> StoreSession:
    made: StoreSession = target.adapter(StoreSession, session_id=session_id, **options)
    return made


def contents(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


async def test_it_is_a_session(target: Target) -> None:
    assert isinstance(session(target), Session)


async def test_add_get_and_clear(target: Target) -> None:
    s = session(target)
    assert await s.get_items() == []
    items: list[Any] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await s.add_items(items)
    assert await s.get_items() == items
    await s.clear_session()
    assert await s.get_items() == []


async def test_pop_item(target: Target) -> None:
    s = session(target)
    assert await s.pop_item() is None
    await s.add_items([{"role": "user", "content": c} for c in ("Hello", "Hi there!", "How?")])
    assert (await s.pop_item() or {}).get("content") == "How?"
    assert contents(await s.get_items()) == ["Hello", "Hi there!"]
    assert (await s.pop_item() or {}).get("content") == "Hi there!"
    assert (await s.pop_item() or {}).get("content") == "Hello"
    assert await s.pop_item() is None
    assert await s.get_items() == []


async def test_pop_touches_only_its_session(target: Target) -> None:
    namespace = uuid.uuid4().hex
    one = session(target, "session_1", namespace=namespace)
    two = session(target, "session_2", namespace=namespace)
    await one.add_items([{"role": "user", "content": "Session 1 message"}])
    await two.add_items([{"role": "user", "content": f"Session 2 message {n}"} for n in (1, 2)])
    assert (await two.pop_item() or {}).get("content") == "Session 2 message 2"
    assert contents(await one.get_items()) == ["Session 1 message"]
    assert contents(await two.get_items()) == ["Session 2 message 1"]


async def test_get_items_with_limit(target: Target) -> None:
    s = session(target)
    await s.add_items([{"role": "user", "content": f"Message {n}"} for n in range(6)])
    assert contents(await s.get_items(limit=2)) == ["Message 4", "Message 5"]
    assert contents(await s.get_items(limit=4))[0] == "Message 2"
    assert len(await s.get_items(limit=10)) == 6
    assert await s.get_items(limit=0) == []


async def test_session_settings_limit_and_override(target: Target) -> None:
    s = session(target, session_settings=SessionSettings(limit=3))
    await s.add_items([{"role": "user", "content": f"Message {n}"} for n in range(5)])
    assert contents(await s.get_items()) == ["Message 2", "Message 3", "Message 4"]
    assert contents(await s.get_items(limit=2)) == ["Message 3", "Message 4"]


async def test_unicode_sql_and_many_items(target: Target) -> None:
    s = session(target)
    odd = ["こんにちは", "😊👍", "O'Reilly", "Robert'); DROP TABLE students;--", '"a"\n\\']
    await s.add_items([{"role": "user", "content": text} for text in odd])
    assert contents(await s.get_items()) == odd
    await s.clear_session()
    many: list[Any] = [{"role": "user", "content": f"m{n}"} for n in range(1234)]  # > 1 page
    await s.add_items(many)
    assert await s.get_items() == many
    assert contents(await s.get_items(limit=1100))[0] == "m134"


async def test_runner_resumes_from_the_store(target: Target) -> None:
    set_tracing_disabled(True)
    model = RecordingModel()
    agent = Agent(name="a", model=model)
    first = session(target, "run-1")
    await Runner.run(agent, "My name is Ada.", session=first)
    again = session(target, "run-1", namespace=first.conversation_id.split("/")[0])
    await Runner.run(agent, "What is my name?", session=again)
    assert contents(model.inputs[-1]) == [
        "My name is Ada.",
        [{"type": "output_text", "text": "Noted.", "annotations": []}],
        "What is my name?",
    ]


class RecordingModel(ScriptedModel):
    """Notes every input it is sent; answers with text."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    def reply(self, items: list[Any]) -> Any:
        self.inputs.append(items)
        return text_message("Noted.")


ADDER = """
import asyncio, sys
from session.adapters.openai_agents import StoreSession

async def main():
    url, key, namespace, tag = sys.argv[1:5]
    s = StoreSession.connect(url, session_id="shared", api_key=key, namespace=namespace)
    for n in range(25):
        await s.add_items([{"role": "user", "content": f"{tag}-{n}"}])
    await s.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.system
async def test_concurrent_adds_from_two_processes(
    backend: str, request: pytest.FixtureRequest
) -> None:
    url, namespace = request.getfixturevalue(f"gateway_{backend}"), uuid.uuid4().hex
    command = [sys.executable, "-c", ADDER, url, API_KEY, namespace]
    writers = [subprocess.Popen([*command, tag], cwd=REPO) for tag in ("a", "b")]  # noqa: ASYNC220
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    s = StoreSession.connect(url, session_id="shared", api_key=API_KEY, namespace=namespace)
    got = contents(await s.get_items())
    await s.close()
    assert sorted(got) == sorted(f"{tag}-{n}" for tag in "ab" for n in range(25))
    for tag in "ab":  # each process's adds keep their order
        assert [c for c in got if c.startswith(tag)] == [f"{tag}-{n}" for n in range(25)]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.system
def test_an_approval_finishes_the_run_in_a_second_process(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url, namespace = request.getfixturevalue(f"gateway_{backend}"), uuid.uuid4().hex
    ledger = tmp_path / "refunds.txt"

    def run(step: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "tests.agents_approval", url, API_KEY, namespace, "ticket-9",
             str(ledger), step],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    stopped = run("start")
    assert stopped["interruptions"] == ["refund"]
    assert not ledger.exists()  # nothing ran before the approval
    finished = run("resume")
    assert finished["final_output"] == "Refunded."
    assert ledger.read_text() == "A-17\n"
    assert finished["items"] == ["message", "function_call", "function_call_output", "message"]
