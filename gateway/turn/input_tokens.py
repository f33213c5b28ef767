"""``POST /v1/responses/input_tokens``: the tokens of a request's whole resolved context.

A ``responses`` upstream counts them itself (exact). Anything else is counted here with
the ``o200k_base`` encoding of OpenAI's current models (``quicktok``, whose vocabulary ships
in its wheel: nothing is downloaded at run time), plus the few tokens each message costs:
exact in spirit for OpenAI models, an estimate for models with other tokenizers.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import Field

from session import Item, normalise_input

from ..api.request_body import CreateResponseBody
from ..context.items import model_context
from ..upstream.errors import UpstreamInvalidResponse
from ..upstream.responses import upstream_payload
from .stateless import stateless_request

if TYPE_CHECKING:
    from .service import ResponsesService

# The fields OpenAI's count endpoint takes, of a stateless request.
_COUNTED_FIELDS = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "text",
    "truncation",
)
# Tokens each item and the request as a whole add around their text (chat framing).
PER_ITEM = 4
PER_REQUEST = 3


class InputTokensBody(CreateResponseBody):
    """A create body, but the model may be left out (then counted with o200k here)."""

    model: str | None = Field(default=None, min_length=1)  # type: ignore[assignment]


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


async def count_input_tokens(service: ResponsesService, body: InputTokensBody, project: str) -> int:
    """Resolve the context as a turn would; ask a ``responses`` upstream, else count here."""
    model = body.model
    route = service.route(model) if model is not None else None
    history = await service.history(body, project)
    items = model_context(service.sealer, project, history, normalise_input(body.input))
    if route is None or model is None:
        request = {"input": items, "instructions": body.instructions, "tools": body.tools}
        return await service.token_counter.count(request)
    request = stateless_request(body, route, items)
    if route.provider.wire_api != "responses":
        return await service.token_counter.count(request)
    payload = upstream_payload(request, stream=False)
    counted = {key: payload[key] for key in _COUNTED_FIELDS if key in payload}
    answer = await service.fetch(route, model, project, "/responses/input_tokens", counted)
    if answer is None:
        return await service.token_counter.count(request)
    tokens = answer.get("input_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise UpstreamInvalidResponse(
            route.provider_name,
            f"The upstream provider '{route.provider_name}' sent no input_tokens count.",
        )
    return tokens
