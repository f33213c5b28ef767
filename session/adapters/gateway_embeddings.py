"""One of a gateway's embeddings models as LangChain ``Embeddings``, through its
``/v1/embeddings``: routed to the model's deployments and metered under the API key, as
any client's embeddings are.

Calls are retried with backoff on network errors, 429 and 5xx, as the agent Store's reads
are; a refusal is a :class:`~session.agent_store.StoreError` with the gateway's message.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from langchain_core.embeddings import Embeddings

from ..agent_store.errors import StoreError
from ..agent_store.remote import BACKOFF_SECONDS, RETRIES, failure_of, transport_error

BATCH = 256  # texts a call sends (the gateway takes up to 2048)


def _vectors(response: httpx.Response, count: int) -> list[list[float]]:
    try:
        data = sorted(response.json()["data"], key=lambda part: part["index"])
        vectors = [[float(x) for x in part["embedding"]] for part in data]
    except (ValueError, KeyError, TypeError) as error:
        raise StoreError(
            "UnknownError", "The gateway's embeddings answer is unreadable."
        ) from error
    if len(vectors) != count:
        raise StoreError("UnknownError", f"The gateway embedded {len(vectors)} of {count} texts.")
    return vectors


class GatewayEmbeddings(Embeddings):
    """The gateway at ``base_url`` (its root) embedding with its model ``model``."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None) -> None:
        options: dict[str, Any] = {
            "base_url": base_url.rstrip("/") + "/v1",
            "headers": {"authorization": f"Bearer {api_key}"} if api_key else {},
            "timeout": 60,
        }
        self.model = model
        self._client = httpx.AsyncClient(**options)
        self._sync_client = httpx.Client(**options)

    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "encoding_format": "float"}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [
            v
            for start in range(0, len(texts), BATCH)
            for v in self._embed(texts[start : start + BATCH])
        ]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            vectors.extend(await self._aembed(texts[start : start + BATCH]))
        return vectors

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]

    def _embed(self, texts: list[str]) -> list[list[float]]:
        for attempt in range(RETRIES):
            try:
                response = self._sync_client.post("/embeddings", json=self._body(texts))
            except httpx.HTTPError as error:
                failure = transport_error(error)
            else:
                refused = failure_of(response)
                if refused is None:
                    return _vectors(response, len(texts))
                failure = refused
            if attempt + 1 < RETRIES:
                time.sleep(BACKOFF_SECONDS * 2**attempt)
        raise failure

    async def _aembed(self, texts: list[str]) -> list[list[float]]:
        for attempt in range(RETRIES):
            try:
                response = await self._client.post("/embeddings", json=self._body(texts))
            except httpx.HTTPError as error:
                failure = transport_error(error)
            else:
                refused = failure_of(response)
                if refused is None:
                    return _vectors(response, len(texts))
                failure = refused
            if attempt + 1 < RETRIES:
                await asyncio.sleep(BACKOFF_SECONDS * 2**attempt)
        raise failure

    async def aclose(self) -> None:
        await self._client.aclose()
        self._sync_client.close()
