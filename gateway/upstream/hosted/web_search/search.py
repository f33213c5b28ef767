"""One search run over the configured backends, in order, each within the time limit.

A backend that cannot be reached, is slower than ``web_search.timeout_seconds``, refuses
or answers garbage hands the search to the next; when none answers, the search fails
with every backend's reason, which the model is told.
"""

from __future__ import annotations

import asyncio

import httpx

from ....web_search_settings import SearchBackend, WebSearchSettings
from .backends import Query, Result, SearchFailure, parse, request

MAX_ANSWER_BYTES = 2 * 1024 * 1024


async def _ask(client: httpx.AsyncClient, backend: SearchBackend, query: Query) -> list[Result]:
    sent = request(backend, query)
    async with client.stream(
        sent.method, sent.url, headers=sent.headers, content=sent.content
    ) as answer:
        body = bytearray()
        async for chunk in answer.aiter_bytes():
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise SearchFailure("its answer is too large")
    read = httpx.Response(answer.status_code, headers=answer.headers, content=bytes(body))
    return parse(backend, read, query.count)


def _name(backend: SearchBackend) -> str:
    return backend.kind


async def search(settings: WebSearchSettings, query: Query, seconds: float) -> list[Result]:
    """The results of the first backend that answers within its time (and ``seconds`` in
    all); a :class:`SearchFailure` naming each backend's reason when none does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    reasons: list[str] = []
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
        for backend in settings.backends:
            left = min(settings.timeout_seconds, deadline - loop.time())
            if left <= 0:
                reasons.append(f"{_name(backend)}: not tried, the time for tools ran out")
                continue
            try:
                async with asyncio.timeout(left):
                    return await _ask(client, backend, query)
            except TimeoutError:
                reasons.append(f"{_name(backend)}: no answer within {left:g} seconds")
            except SearchFailure as failure:
                reasons.append(f"{_name(backend)}: {failure.message}")
            except httpx.HTTPError as error:
                reasons.append(f"{_name(backend)}: {type(error).__name__}")
    raise SearchFailure("; ".join(reasons) or "no search backend is configured")
