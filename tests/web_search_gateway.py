"""The gateway with ``web_search`` backends, against the strict fake search backends and
the fake models, and the tests' helpers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_search import FakeSearch, backend_settings
from .fake_upstream import FakeUpstream, Reply
from .servers import serve

KINDS = ("searxng", "brave", "tavily")


@contextmanager
def fake_searches() -> Iterator[dict[str, tuple[FakeSearch, str]]]:
    """One served fake of each backend, by kind."""
    with ExitStack() as stack:
        served = {}
        for kind in KINDS:
            fake = FakeSearch(kind)
            served[kind] = (fake, stack.enter_context(serve(fake.app)))
        yield served


@contextmanager
def search_gateway(
    fake_upstream: tuple[FakeUpstream, str],
    path: Path,
    backends: list[tuple[FakeSearch, str]],
    config: dict[str, Any] | None = None,
    **settings: Any,
) -> Iterator[Gateway]:
    """A gateway searching through ``backends`` (in order); ``config``: more top-level keys."""
    for backend, _ in backends:
        backend.reset(backend.mode)
    fake, url = fake_upstream
    web_search = {
        "backends": [backend_settings(f.kind, where) for f, where in backends],
        "timeout_seconds": 5,
        **settings,
    }
    made = gateway_config(url, path / "sessions.db", web_search=web_search, **(config or {}))
    with serve(create_app(made)) as gateway_url:
        gateway = Gateway(gateway_url, made, fake)
        try:
            yield gateway
        finally:
            for searched, _ in backends:
                searched.release.set()
            for client in gateway.clients:
                client.close()


def search(query: str, call_id: str = "c1", name: str = "web_search") -> Reply:
    """The model calling the offered search function."""
    arguments = json.dumps({"query": query})
    return Reply(tool_calls=[(call_id, name, arguments)], finish_reason="tool_calls")


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]
