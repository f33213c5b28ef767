"""The adapter for an upstream Responses API: stateless calls, events passed through.

The upstream never stores anything (``store: false``, no ``previous_response_id``); its
item ids are replaced by the gateway's own so that ids stay stable across providers.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from session import new_item_id

from ...base import Capabilities, Replay, UpstreamStream
from ...errors import UpstreamError, UpstreamInvalidResponse
from ...reasoning_state import ReasoningState
from ...results import Event, Item, TurnResult, complete_usage, failed_result
from ...routing.bound_items import bind, replayable
from ...translation.cache import EncodedInputs, object_with_array
from ...translation.tool_errors import without_error_flag
from ...transport.failures import describe_stream_failure, scrub
from ...transport.http import ProviderClient

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
# The gateway sends its own lifecycle events; the upstream's are read, not forwarded.
_LIFECYCLE = frozenset({"response.created", "response.in_progress", "response.queued"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class MalformedResponse(ValueError):
    """An upstream answer that is not shaped like a Responses object or event."""


def check_item(item: Any, where: str) -> Item:
    """An output item: an object with a string ``type``; messages carry a list of parts."""
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise MalformedResponse(f"'{where}' is not an output item")
    if item["type"] == "message":
        content = item.get("content")
        if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
            raise MalformedResponse(f"'{where}.content' is not a list of parts")
    return item


def check_response(response: Any) -> dict[str, Any]:
    if not isinstance(response, dict):
        raise MalformedResponse("the response is not an object")
    output = response.get("output")
    if not isinstance(output, list):
        raise MalformedResponse("'output' is missing or not a list")
    for index, item in enumerate(output):
        check_item(item, f"output[{index}]")
    for key in ("usage", "error", "incomplete_details"):
        if response.get(key) is not None and not isinstance(response[key], dict):
            raise MalformedResponse(f"'{key}' is not an object")
    return response


class IdMap:
    """Upstream item id -> gateway item id, minted on first sight; with ``state``, each
    item's account-bound state sealed for its account (see :mod:`.bound_items`)."""

    def __init__(self, state: ReasoningState | None = None) -> None:
        self._ids: dict[str, str] = {}
        self._state = state

    def get(self, upstream_id: str, item_type: str) -> str:
        if upstream_id not in self._ids:
            self._ids[upstream_id] = new_item_id(item_type)
        return self._ids[upstream_id]

    def item(self, item: Item) -> Item:
        item = copy.deepcopy(item)
        if isinstance(item.get("id"), str) and item["id"]:
            item["id"] = self.get(item["id"], item.get("type", "item"))
        return item if self._state is None else bind(item, self._state)

    def event(self, event: Event) -> Event:
        event = {k: v for k, v in event.items() if k != "sequence_number"}
        if isinstance(event.get("item"), dict):
            event["item"] = self.item(event["item"])
        if isinstance(event.get("item_id"), str):
            event["item_id"] = self.get(event["item_id"], "item")
        return event

    def result(self, response: Any) -> TurnResult:
        response = check_response(response)
        status = response.get("status")
        return TurnResult(
            status=status if status in ("completed", "incomplete", "failed") else "completed",
            output=[self.item(item) for item in response.get("output") or []],
            usage=complete_usage(response.get("usage")),
            incomplete_details=response.get("incomplete_details"),
            error=response.get("error"),
            service_tier=tier if isinstance(tier := response.get("service_tier"), str) else None,
        )


def _stateless_items(items: list[Item], state: ReasoningState | None = None) -> list[Item]:
    """The items without the gateway's ids, failed tool outputs marked in their text, the
    state this account made opened, and without items whose state another account or
    another provider's model made (see :mod:`.bound_items`), which this one cannot read."""
    return [
        {key: value for key, value in without_error_flag(item).items() if key != "id"}
        for item in replayable(items, state)
    ]


def upstream_payload(request: Item, stream: bool, state: ReasoningState | None = None) -> Item:
    """The request as the upstream gets it: stateless, without the gateway's item ids."""
    payload = {key: value for key, value in request.items() if key not in ("conversation",)}
    payload["input"] = _stateless_items(request["input"], state)
    payload["store"] = False
    payload["stream"] = stream
    payload.pop("previous_response_id", None)
    return payload


def upstream_body(
    request: Item, stream: bool, encoded: EncodedInputs, state: ReasoningState | None = None
) -> list[bytes]:
    """:func:`upstream_payload` as JSON (its input last) in pieces, the input's encoding
    reused from earlier requests of the chain sent to the same account."""
    payload = upstream_payload({**request, "input": []}, stream)
    del payload["input"]

    def encode(items: list[Item]) -> bytes:
        return orjson.dumps(_stateless_items(items, state))[1:-1]

    tag = state.origin if state is not None else ""
    return object_with_array(payload, "input", encoded.encode(request["input"], encode, tag))


class ResponsesUpstream:
    """Answers, counts input tokens and compacts: a Responses API does all three itself."""

    def __init__(self, client: ProviderClient, state: ReasoningState | None = None) -> None:
        self._client = client
        self._state = state  # seals and opens what only this account can replay
        self._name = client.name
        self._settings = client.settings
        self.capabilities = Capabilities(
            count_input_tokens=self._count_input_tokens, compact=self._compact
        )

    async def _count_input_tokens(self, request: Item) -> int:
        payload = upstream_payload(request, stream=False, state=self._state)
        counted = {key: payload[key] for key in _COUNTED_FIELDS if key in payload}
        answer = await self._client.fetch_json("/responses/input_tokens", counted)
        tokens = answer.get("input_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            raise self._invalid("sent no input_tokens count")
        return tokens

    async def _compact(self, request: Item) -> Item:
        payload = upstream_payload(request, stream=False, state=self._state)
        for key in ("store", "stream"):
            del payload[key]
        answer = await self._client.fetch_json("/responses/compact", payload)
        output = answer.get("output")
        if not isinstance(output, list):
            raise self._invalid("sent an invalid compaction")
        if self._state is not None:
            state = self._state
            answer["output"] = [
                bind(item, state) if isinstance(item, dict) else item for item in output
            ]
        return answer

    def _invalid(self, what: str) -> UpstreamInvalidResponse:
        return UpstreamInvalidResponse(self._name, f"The upstream provider '{self._name}' {what}.")

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        payload = upstream_body(request, stream, self._client.cache(EncodedInputs), self._state)
        if not stream:
            body = await self._client.fetch_json("/responses", payload)
            try:
                result = IdMap(self._state).result(body)
            except MalformedResponse as error:
                raise UpstreamInvalidResponse(
                    self._name,
                    f"The upstream provider '{self._name}' sent an invalid answer: {error}.",
                ) from None
            yield Replay([], result)
            return
        async with self._client.open_events("/responses", payload) as data:
            yield self._stream(data)

    async def _stream(self, data: AsyncIterator[str]) -> UpstreamStream:
        ids = IdMap(self._state)
        done: list[Item] = []
        try:
            async for text in data:
                if not text.strip() or text.strip() == "[DONE]":
                    continue
                event = orjson.loads(text)
                if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                    raise MalformedResponse("an event is not an object with a type")
                kind = event["type"]
                if kind in _LIFECYCLE:
                    continue
                if kind in _TERMINAL:
                    yield ids.result(event.get("response"))
                    return
                if kind == "error":
                    message = scrub(
                        f"The upstream provider '{self._name}' reported an error "
                        f"({event.get('code')}): {event.get('message')}",
                        self._settings,
                    )
                    yield failed_result(message, done)
                    return
                mapped = ids.event(event)
                if kind == "response.output_item.done":
                    done.append(check_item(mapped.get("item"), "item"))
                yield mapped
        except MalformedResponse as error:
            yield failed_result(
                f"The upstream provider '{self._name}' sent an invalid event: {error}.", done
            )
            return
        except (aiohttp.ClientError, TimeoutError, UpstreamError, ValueError) as error:
            yield failed_result(describe_stream_failure(self._name, error), done)
            return
        yield failed_result(
            f"The answer from upstream provider '{self._name}' ended before it was complete.", done
        )
