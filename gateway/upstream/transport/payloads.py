"""A request body as the provider is sent it: JSON encoded once, or written from the
pieces it was made of."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

# A request body: an object to encode, or JSON in pieces (see ``object_with_array``).
Body = dict[str, Any] | list[bytes]


class JSONPieces(aiohttp.payload.Payload):
    """A JSON body written as the pieces it was made of: a long context it holds is sent
    from where it is kept, without a copy of the whole body in between."""

    _value: list[bytes]
    _autoclose = True  # nothing to release

    def __init__(self, pieces: list[bytes]) -> None:
        super().__init__(pieces, content_type="application/json")
        self._size = sum(map(len, pieces))

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return b"".join(self._value).decode(encoding, errors)

    async def write(self, writer: aiohttp.abc.AbstractStreamWriter) -> None:
        for piece in self._value:
            await writer.write(piece)


def request_data(payload: Body) -> bytes | JSONPieces:
    """What aiohttp sends for ``payload``: its bytes, or its pieces one after another."""
    if isinstance(payload, dict):
        return orjson.dumps(payload)
    return payload[0] if len(payload) == 1 else JSONPieces(payload)
