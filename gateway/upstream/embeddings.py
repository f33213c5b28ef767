"""Embeddings through a provider's OpenAI-shaped ``/embeddings`` (OpenAI, Ollama, vLLM, TEI
and the like), for a model routed as chat models are: its deployments and keys tried in
turn, then its fallbacks, a batch at a time.

The provider is always asked for floats: a client asking for ``base64`` gets them encoded
here, as providers that speak OpenAI's shape do not all encode.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import GatewayConfig, Route
from ..errors import invalid_request
from .errors import UpstreamError, UpstreamInvalidResponse
from .routing.cooldowns import Cooldowns
from .routing.routed import Candidate, plan, retryable
from .transport.http import ProviderClient

EmbeddingInput = str | list[str] | list[int] | list[list[int]]


@dataclass(frozen=True)
class Embedded:
    """The vectors of one call's inputs (in input order), the tokens the provider counted,
    and the deployment that answered."""

    vectors: list[list[float]]
    prompt_tokens: int
    route: Route

    def answer(self, model: str, encoding: str) -> dict[str, Any]:
        """OpenAI's ``CreateEmbeddingResponse`` naming ``model`` as the client did."""
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": as_base64(vector) if encoding == "base64" else vector,
            }
            for index, vector in enumerate(self.vectors)
        ]
        usage = {"prompt_tokens": self.prompt_tokens, "total_tokens": self.prompt_tokens}
        return {"object": "list", "data": data, "model": model, "usage": usage}


def as_base64(vector: Sequence[float]) -> str:
    """A vector as OpenAI encodes it: little-endian float32, in base64."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vectors(body: dict[str, Any], count: int, provider: str) -> tuple[list[list[float]], int]:
    data = body.get("data")
    if not isinstance(data, list) or len(data) != count:
        raise UpstreamInvalidResponse(
            provider, f"The provider '{provider}' answered without {count} embeddings."
        )
    ordered: list[list[float] | None] = [None] * count
    for position, entry in enumerate(data):
        vector = entry.get("embedding") if isinstance(entry, dict) else None
        index = entry.get("index", position) if isinstance(entry, dict) else position
        if isinstance(vector, str):
            vector = np.frombuffer(base64.b64decode(vector), dtype="<f4").tolist()
        if (
            not isinstance(vector, list)
            or not vector
            or not isinstance(index, int)
            or not 0 <= index < count
            or not all(isinstance(x, int | float) for x in vector)
        ):
            raise UpstreamInvalidResponse(
                provider, f"The provider '{provider}' answered an embedding that is not a vector."
            )
        ordered[index] = [float(x) for x in vector]
    if any(vector is None for vector in ordered):
        raise UpstreamInvalidResponse(
            provider, f"The provider '{provider}' answered some embeddings twice."
        )
    usage = body.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return [v for v in ordered if v is not None], tokens if isinstance(tokens, int) else 0


class Embedder:
    """Embeds texts with the configured models through the providers' clients."""

    def __init__(
        self,
        config: GatewayConfig,
        clients: Mapping[str, ProviderClient],
        cooldowns: Cooldowns,
    ) -> None:
        self._config = config
        self._clients = clients
        self._cooldowns = cooldowns
        self._rng = random.Random()

    def check(self, model: str) -> None:
        """A 400 if ``model`` is routed to no provider that serves embeddings."""
        routes = self._config.routes(model)
        if not routes:
            raise invalid_request(
                f"The model '{model}' does not exist or is not routed by this gateway.",
                param="model",
                code="model_not_found",
            )
        if not any(r.provider.wire.embeddings for r in routes):
            raise invalid_request(
                f"The model '{model}' does not serve embeddings: its provider's wire "
                f"'{routes[0].provider.wire_api}' has no embeddings endpoint.",
                param="model",
                code="model_not_supported",
            )

    def _candidates(self, model: str) -> list[Candidate]:
        plans = plan(self._config, model, self._cooldowns, self._rng)
        return [
            c
            for candidates in plans
            for c in candidates
            if c.route.provider.wire.embeddings and c.route.provider_name in self._clients
        ]

    async def embed(
        self, model: str, inputs: EmbeddingInput, *, dimensions: int | None = None
    ) -> Embedded:
        """One call's embeddings: the first deployment (and key) that answers, in turn."""
        self.check(model)
        count = (
            1 if isinstance(inputs, str) or (inputs and isinstance(inputs[0], int)) else len(inputs)
        )
        last: UpstreamError | None = None
        for candidate in self._candidates(model):
            route = candidate.route
            client = self._clients[route.provider_name]
            if candidate.key is not None:
                client = client.with_key(candidate.key.key)
            payload: dict[str, Any] = {
                "model": route.upstream_model,
                "input": inputs,
                "encoding_format": "float",
            }
            if dimensions is not None:
                payload["dimensions"] = dimensions
            try:
                body = await client.fetch_json("/embeddings", payload)
                vectors, tokens = _vectors(body, count, route.provider_name)
            except UpstreamError as error:
                if not retryable(error):
                    raise
                self._cooldowns.failed(candidate.key_name, error.message)
                last = error
                continue
            return Embedded(vectors, tokens, route)
        assert last is not None  # ``check`` found a deployment
        raise last

    async def embed_texts(
        self, model: str, texts: list[str], batch: int, *, dimensions: int | None = None
    ) -> tuple[list[list[float]], int, Route | None]:
        """The vectors of many texts, ``batch`` texts to a call; the tokens in all."""
        vectors: list[list[float]] = []
        tokens = 0
        route: Route | None = None
        for start in range(0, len(texts), batch):
            embedded = await self.embed(model, texts[start : start + batch], dimensions=dimensions)
            vectors += embedded.vectors
            tokens += embedded.prompt_tokens
            route = embedded.route
        return vectors, tokens, route
