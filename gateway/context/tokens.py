"""Counting tokens as OpenAI's current models do: the ``o200k_base`` encoding (``quicktok``,
whose vocabulary ships in its wheel: nothing is downloaded at run time), plus the few
tokens each message costs. Exact in spirit for OpenAI models, an estimate for others.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from session import Item

# Tokens each item and the request as a whole add around their text (chat framing).
PER_ITEM = 4
PER_REQUEST = 3


def _texts(value: Any) -> list[str]:
    """Every string a model reads in ``value``: text parts, arguments, outputs, tool specs."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for entry in value for text in _texts(entry)]
    if not isinstance(value, dict):
        return []
    if value.get("type") in ("input_image", "input_file", "image_url"):
        return []  # not text: no encoding of ours counts it
    texts: list[str] = []
    for key, child in value.items():
        if key in ("id", "type", "status", "call_id", "role"):
            continue
        texts += _texts(child)
    return texts


class TokenCounter:
    """Loads the encoding on first use, off the event loop."""

    def __init__(self) -> None:
        self._encoding: Any = None
        self._loading = asyncio.Lock()

    async def _loaded(self) -> Any:
        async with self._loading:
            if self._encoding is None:
                self._encoding = await asyncio.to_thread(_load)
        return self._encoding

    async def count(self, request: dict[str, Any]) -> int:
        """The tokens of a whole request: its items, instructions and tools."""
        encoding = await self._loaded()

        def count() -> int:
            items = request.get("input") or []
            texts = _texts(items) + _texts(request.get("instructions"))
            if request.get("tools"):
                texts.append(orjson.dumps(request["tools"]).decode())
            tokens = sum(len(encoding.encode_ordinary(text)) for text in texts)
            return tokens + PER_ITEM * len(items) + PER_REQUEST

        return await asyncio.to_thread(count)

    async def item_sizes(self, items: list[Item]) -> list[int]:
        """The tokens of each item, its framing included."""
        encoding = await self._loaded()

        def sizes() -> list[int]:
            return [
                PER_ITEM + sum(len(encoding.encode_ordinary(text)) for text in _texts(item))
                for item in items
            ]

        return await asyncio.to_thread(sizes)


def _load() -> Any:
    import quicktok  # type: ignore[import-untyped]

    return quicktok.get_encoding("o200k_base")
