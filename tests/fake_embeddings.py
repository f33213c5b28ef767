"""A strict fake of an OpenAI-shaped ``/v1/embeddings`` served over real HTTP, whose vectors
carry meaning: each text is a hashed bag of its words (a plural's ``s`` dropped) and of
their character trigrams, scaled to unit length, so that a chunk sharing a query's words
really ranks first. It records every request; ``hold`` makes it wait for ``release``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

DIMENSIONS = 256
KEY = "embed-key"
_WORD = re.compile(r"\w+")


def _bucket(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=4).digest(), "big")


def embed(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The fake model's vector of ``text``."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        word = word[:-1] if len(word) > 3 and word.endswith("s") else word
        vector[_bucket(word) % dimensions] += 1.0
        padded = f"#{word}#"
        for start in range(len(padded) - 2):
            vector[_bucket(padded[start : start + 3]) % dimensions] += 0.25
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


@dataclass
class FakeEmbeddings:
    requests: list[dict[str, Any]] = field(default_factory=list)
    hold: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    failing: bool = False

    def reset(self) -> None:
        self.requests.clear()
        self.hold, self.failing = False, False
        self.release = threading.Event()

    async def _embeddings(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return JSONResponse({"error": {"message": "bad key", "type": "auth"}}, 401)
        body = await request.json()
        self.requests.append(body)
        if self.failing:
            return JSONResponse({"error": {"message": "model overloaded"}}, 400)
        if self.hold:
            await asyncio.to_thread(self.release.wait)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return JSONResponse({"error": {"message": "input must be text"}}, 400)
        if body.get("encoding_format", "float") != "float":
            return JSONResponse({"error": {"message": "only float here"}}, 400)
        dimensions = body.get("dimensions") or DIMENSIONS
        if type(dimensions) is not int or not 1 <= dimensions <= DIMENSIONS:
            message = f"dimensions must be from 1 to {DIMENSIONS}"  # as OpenAI's models bound it
            return JSONResponse({"error": {"message": message}}, 400)
        data = [
            {"object": "embedding", "index": n, "embedding": embed(t, dimensions)}
            for n, t in enumerate(texts)
        ]
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/embeddings", self._embeddings, methods=["POST"])])
