"""The adapter for an upstream Responses API: stateless calls, events passed through.

The upstream never stores anything (``store: false``, no ``previous_response_id``); its
item ids are replaced by the gateway's own so that ids stay stable across providers.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from httpx_sse import EventSource

from session import new_item_id

from ..config import ProviderSettings
from .base import UpstreamStream
from .http import describe_stream_failure, post
from .results import Event, Item, TurnResult, complete_usage, failed_result

# The gateway sends its own lifecycle events; the upstream's are read, not forwarded.
_LIFECYCLE = frozenset({"response.created", "response.in_progress", "response.queued"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class IdMap:
    """Upstream item id -> gateway item id, minted on first sight."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def get(self, upstream_id: str, item_type: str) -> str:
        if upstream_id not in self._ids:
            self._ids[upstream_id] = new_item_id(item_type)
        return self._ids[upstream_id]

    def item(self, item: Item) -> Item:
        item = copy.deepcopy(item)
        if item.get("id"):
            item["id"] = self.get(item["id"], item.get("type", "item"))
        return item

    def event(self, event: Event) -> Event:
        event = {k: v for k, v in event.items() if k != "sequence_number"}
        if isinstance(event.get("item"), dict):
            event["item"] = self.item(event["item"])
        if isinstance(event.get("item_id"), str):
            event["item_id"] = self.get(event["item_id"], "item")
        return event

    def result(self, response: dict[str, Any]) -> TurnResult:
        status = response.get("status")
        return TurnResult(
            status=status if status in ("completed", "incomplete", "failed") else "completed",
            output=[self.item(item) for item in response.get("output") or []],
            usage=complete_usage(response.get("usage")),
            incomplete_details=response.get("incomplete_details"),
            error=response.get("error"),
        )


def upstream_payload(request: Item, stream: bool) -> Item:
    """The request as the upstream gets it: stateless, without the gateway's item ids."""
    payload = {key: value for key, value in request.items() if key not in ("conversation",)}
    payload["input"] = [
        {key: value for key, value in item.items() if key != "id"} for item in request["input"]
    ]
    payload["store"] = False
    payload["stream"] = stream
    payload.pop("previous_response_id", None)
    return payload


class ResponsesUpstream:
    def __init__(self, client: httpx.AsyncClient, name: str, settings: ProviderSettings) -> None:
        self._client = client
        self._name = name
        self._settings = settings

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        payload = upstream_payload(request, stream)
        async with post(
            self._client, self._name, self._settings, "/responses", payload
        ) as response:
            yield self._stream(response) if stream else self._whole(response)

    def _failed(self, error: Exception, output: list[Item] | None = None) -> TurnResult:
        return failed_result(describe_stream_failure(self._name, error), output or [])

    async def _whole(self, response: httpx.Response) -> UpstreamStream:
        try:
            body = json.loads(await response.aread())
            yield IdMap().result(body)
        except (httpx.HTTPError, ValueError, AttributeError) as error:
            yield self._failed(error)

    async def _stream(self, response: httpx.Response) -> UpstreamStream:
        ids = IdMap()
        done: list[Item] = []
        try:
            async for sse in EventSource(response).aiter_sse():
                if not sse.data.strip() or sse.data.strip() == "[DONE]":
                    continue
                event = json.loads(sse.data)
                kind = event.get("type")
                if kind in _LIFECYCLE:
                    continue
                if kind in _TERMINAL:
                    yield ids.result(event.get("response") or {})
                    return
                if kind == "error":
                    message = (
                        f"The upstream provider '{self._name}' reported an error "
                        f"({event.get('code')}): {event.get('message')}"
                    )
                    yield failed_result(message, done)
                    return
                mapped = ids.event(event)
                if kind == "response.output_item.done":
                    done.append(mapped["item"])
                yield mapped
        except (httpx.HTTPError, ValueError, AttributeError) as error:
            yield self._failed(error, done)
            return
        yield self._failed(EOFError("the stream ended before the response was complete"), done)
