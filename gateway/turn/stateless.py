"""The stateless request a turn sends upstream: the client's fields and the whole context."""

from __future__ import annotations

from typing import Any

from session import Item

from ..api.request_body import CreateResponseBody
from ..config import Route
from ..upstream.wires.anthropic.passthrough import PASSTHROUGH

# Top-level fields the gateway consumes itself and never sends upstream.
_GATEWAY_FIELDS = frozenset(
    {
        "previous_response_id",
        "conversation",
        "store",
        "stream",
        "stream_options",
        "background",
        "metadata",
        PASSTHROUGH,  # set by the Messages edge alone (below), never by a client
    }
)


def stateless_request(body: CreateResponseBody, route: Route, items: list[Item]) -> Item:
    """What goes upstream: the client's fields but the gateway's own, the whole context."""
    request: dict[str, Any] = {
        key: value
        for key, value in (body.model_extra or {}).items()
        if key not in _GATEWAY_FIELDS and value is not None
    }
    for key in CreateResponseBody.model_fields:
        value = getattr(body, key)
        if key not in _GATEWAY_FIELDS and value is not None:
            request[key] = value
    request["model"] = route.upstream_model
    request["input"] = items
    if body.passthrough is not None:
        request[PASSTHROUGH] = body.passthrough
    return request
