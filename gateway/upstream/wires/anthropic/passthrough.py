"""A Messages API request that reaches a Claude deployment as its client sent it. Pure.

The ``/v1/messages`` edge hands the client's body along with its translation, under
:data:`PASSTHROUGH` in the stateless request. A deployment on this wire sends that body
(``cache_control``, thinking and its signatures, tools, documents, ``metadata``,
``service_tier``, ``context_management``, any field the gateway does not know) with the
deployment's model name and the client's ``anthropic-beta`` header, and hands the answer
back as it came (:data:`RAW_MESSAGE`, :data:`RAW_EVENT`) besides reading it as any answer
for the turn's record, usage and cost. Every other wire reads the translation
(:func:`without_passthrough`).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from ....sealing import THINKING_PREFIX
from ...base import Capabilities, Upstream, UpstreamStream, Wrapping
from ...results import Item

PASSTHROUGH = "anthropic_passthrough"
RAW_MESSAGE = "anthropic.message"  # a whole answer, as the provider sent it
RAW_EVENT = "anthropic.event"  # one stream event, as the provider sent it
_COUNTED = (  # what /v1/messages/count_tokens takes of a request
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "cache_control",
    "mcp_servers",
    "context_management",
)


def passthrough(body: Item, beta: str | None) -> Item:
    """What the edge hands along: the client's ``body`` and ``anthropic-beta`` header."""
    return {"body": body, "beta": beta}


def _own_blocks(message: Any) -> Any:
    """``message`` without the thinking blocks the gateway sealed for another model
    (``gwt1.``): Claude cannot read them, as the other wires cannot read Claude's."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return message
    kept = [
        block
        for block in content
        if not (
            isinstance(block, dict)
            and block.get("type") == "thinking"
            and str(block.get("signature") or "").startswith(THINKING_PREFIX)
        )
    ]
    return message if len(kept) == len(content) else {**message, "content": kept}


def upstream_body(sent: Item, model: str, *, stream: bool) -> Item:
    """The client's body as the deployment ``model`` gets it."""
    body = {**sent["body"], "model": model}
    if stream:
        body["stream"] = True
    else:
        body.pop("stream", None)
    messages = [_own_blocks(message) for message in body.get("messages") or []]
    body["messages"] = [
        message
        for message in messages
        if not (isinstance(message, dict) and message.get("content") == [])
    ]
    return body


def counted(body: Item) -> Item:
    """What ``count_tokens`` takes of an :func:`upstream_body`."""
    return {key: body[key] for key in _COUNTED if key in body}


def beta_header(configured: str | None, sent: Item) -> str | None:
    """The provider's ``anthropic_beta`` and the client's, each beta once."""
    names: list[str] = []
    for header in (configured, sent.get("beta")):
        for name in str(header or "").split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return ",".join(names) or None


class WithoutPassthrough(Wrapping):
    """An upstream of another wire: it gets the translation alone."""

    def __init__(self, inner: Upstream) -> None:
        super().__init__(inner)
        if inner.capabilities.count_input_tokens is not None:
            count = inner.capabilities.count_input_tokens

            async def counted(request: Item) -> int:
                return await count(without_passthrough(request))

            self.capabilities = Capabilities(counted, inner.capabilities.compact)

    def open(self, request: Item, *, stream: bool) -> AbstractAsyncContextManager[UpstreamStream]:
        return self._inner.open(without_passthrough(request), stream=stream)


def without_passthrough(request: Item) -> Item:
    """``request`` without the client's own body."""
    if PASSTHROUGH not in request:
        return request
    return {key: value for key, value in request.items() if key != PASSTHROUGH}


def relayed(event: Item) -> Item:
    """A provider's stream event, to go to the client as it came."""
    return {"type": RAW_EVENT, "event": event}
