"""A soak of routed turns against providers that fail at random: none is lost, none is
answered twice. ``GATEWAY_SOAK_TURNS`` sets how many (2,000 by default: about ten seconds)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway import create_app, parse_config

from .servers import serve

pytestmark = [pytest.mark.system]

TURNS = int(os.environ.get("GATEWAY_SOAK_TURNS", "2000"))
FAIL_RATE = 0.3
MAX_FAILS_PER_TURN = 4  # below the test's retry.attempts (8)


class FlakyProvider:
    """A Chat Completions provider that fails 30% of calls: 500, 429, 503, a stream cut
    before its first delta, or an error chunk before any output. Seeded. One turn fails at
    most ``MAX_FAILS_PER_TURN`` times across the providers sharing ``failed``, so that
    its retries always suffice and the test cannot fail by chance."""

    def __init__(self, seed: int, failed: Counter[str]) -> None:
        self.random = random.Random(seed)
        self.calls = Counter[str]()
        self.failed = failed  # by turn (its input text), shared by every provider

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        text = body["messages"][-1]["content"]
        if self.random.random() < FAIL_RATE and self.failed[text] < MAX_FAILS_PER_TURN:
            self.failed[text] += 1
            failure = self.random.choice(["500", "429", "503", "cut", "error_chunk"])
            self.calls[failure] += 1
            if failure.isdigit() or not body.get("stream"):
                status = int(failure) if failure.isdigit() else 502
                return JSONResponse(
                    {"error": {"message": "flaky"}}, status, headers={"retry-after": "0"}
                )
            return StreamingResponse(self._broken(failure), media_type="text/event-stream")
        self.calls["ok"] += 1
        answer = f"answer to {text}"
        if not body.get("stream"):
            message = {"role": "assistant", "content": answer}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return JSONResponse({"id": "c", "object": "chat.completion", "choices": [choice]})
        return StreamingResponse(self._answer(answer), media_type="text/event-stream")

    @staticmethod
    async def _answer(answer: str) -> AsyncIterator[bytes]:
        for delta, finish in (
            ({"role": "assistant", "content": ""}, None),
            ({"content": answer}, None),
            ({}, "stop"),
        ):
            chunk = {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    @staticmethod
    async def _broken(failure: str) -> AsyncIterator[bytes]:
        first = {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant"}}],
        }
        yield f"data: {json.dumps(first)}\n\n".encode()
        if failure == "error_chunk":
            yield b'data: {"error": {"message": "overloaded"}}\n\n'
        # "cut": the stream ends without a finish reason or [DONE]

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])


@pytest.mark.anyio
async def test_turns_against_flaky_providers_are_each_answered_once(tmp_path: Path) -> None:
    failed = Counter[str]()
    providers = [FlakyProvider(seed, failed) for seed in (1, 2)]
    with serve(providers[0].app) as east, serve(providers[1].app) as west:
        config = parse_config(
            {
                "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
                "providers": {
                    "east": {"wire_api": "chat_completions", "base_url": f"{east}/v1"},
                    "west": {"wire_api": "chat_completions", "base_url": f"{west}/v1"},
                },
                "models": {
                    "m": {
                        "deployments": [{"provider": "east"}, {"provider": "west"}],
                        "retry": {"attempts": 8, "max_wait_seconds": 0.5},
                    }
                },
                "routing": {"cooldown": {"allowed_fails": 1000}},
            },
            env={},
        )
        with serve(create_app(config)) as url:
            async with openai.AsyncOpenAI(
                base_url=f"{url}/v1", api_key="k", max_retries=0, _strict_response_validation=True
            ) as client:
                limit = asyncio.Semaphore(8)

                async def turn(number: int) -> str:
                    async with limit:
                        if number % 2:
                            response = await client.responses.create(model="m", input=f"q{number}")
                            return response.output_text
                        events = [
                            e
                            async for e in await client.responses.create(
                                model="m", input=f"q{number}", stream=True
                            )
                        ]
                        kinds = Counter(e.type for e in events)
                        assert kinds["response.created"] == 1, kinds
                        assert kinds["response.completed"] == 1 and kinds["response.failed"] == 0, (
                            kinds
                        )
                        return events[-1].response.output_text  # type: ignore[union-attr]

                answers = await asyncio.gather(*(turn(n) for n in range(TURNS)))
    assert answers == [f"answer to q{n}" for n in range(TURNS)]
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        stored = conn.execute("SELECT status, count(*) FROM responses GROUP BY status").fetchall()
    assert stored == [("completed", TURNS)]  # each turn stored once, none failed
    failures = sum(p.calls.total() - p.calls["ok"] for p in providers)
    assert failures > TURNS * FAIL_RATE * 0.5  # the providers did fail that often
    print(f"\n{TURNS} turns, {failures} failed calls retried, none lost or answered twice")
