"""The adapter for Anthropic's Messages API (``wire_api: anthropic``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson

from ....config import Route
from ...base import Capabilities, Replay, UpstreamStream
from ...errors import MalformedAnswer, UpstreamError, UpstreamInvalidResponse, UpstreamRejected
from ...reasoning_state import ReasoningState
from ...results import Event, Item
from ...streams import ReportedError, ended
from ...transport.failures import scrub
from ...transport.http import ProviderClient
from . import passthrough
from .request import MessagesRequest, to_messages_request
from .response import CONTEXT_WINDOW_EXCEEDED, MessagesTranslator

MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"


class AnthropicUpstream:
    def __init__(self, client: ProviderClient, route: Route, state: ReasoningState) -> None:
        self._client = client
        self._name = client.name
        self._route = route
        self._state = state
        self.capabilities = Capabilities(count_input_tokens=self._count_input_tokens)

    def _translate(self, request: Item, *, stream: bool) -> MessagesRequest:
        return to_messages_request(request, route=self._route, stream=stream, state=self._state)

    def _passed(self, request: Item, *, stream: bool) -> tuple[ProviderClient, Item] | None:
        """The client and body of a request its client's body goes as (see passthrough)."""
        sent = request.get(passthrough.PASSTHROUGH)
        if sent is None:
            return None
        client = self._client
        beta = passthrough.beta_header(client.settings.anthropic_beta, sent)
        if beta is not None:
            client = client.with_headers({"anthropic-beta": beta})
        return client, passthrough.upstream_body(sent, self._route.upstream_model, stream=stream)

    async def _count_input_tokens(self, request: Item) -> int:
        passed = self._passed(request, stream=False)
        if passed is not None:
            client, payload = passed[0], passthrough.counted(passed[1])
        else:
            client = self._client
            payload = self._translate(request, stream=False).count_tokens_payload()
        body = await client.fetch_json(COUNT_TOKENS, payload)
        tokens = body.get("input_tokens")
        if not isinstance(tokens, int):
            raise self._invalid("its token count has no 'input_tokens'")
        return tokens

    def _invalid(self, problem: str) -> UpstreamError:
        return UpstreamInvalidResponse(
            self._name, f"The upstream provider '{self._name}' sent an invalid answer: {problem}."
        )

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        summary = (request.get("reasoning") or {}).get("summary") is not None
        passed = self._passed(request, stream=stream)
        if passed is not None:  # the client's own body; its answer goes back as it came
            client, payload = passed
            translator = MessagesTranslator(self._state, reasoning_summary=summary)
        else:
            client, made = self._client, self._translate(request, stream=stream)
            payload = made.payload
            translator = MessagesTranslator(self._state, made.tool_names, reasoning_summary=summary)
        relay = passed is not None
        if not stream:
            body = await client.fetch_json(MESSAGES, payload)
            try:
                translator.message(body)
            except MalformedAnswer as error:
                raise self._invalid(str(error)) from None
            if translator.stop_reason == CONTEXT_WINDOW_EXCEEDED:  # truncation may retry
                raise UpstreamRejected(
                    self._name,
                    f"The upstream provider '{self._name}' ran out of context window "
                    "while answering.",
                    status=400,
                    code="context_length_exceeded",
                )
            raw = [{"type": passthrough.RAW_MESSAGE, "message": body}] if relay else []
            yield Replay(raw, translator.finish()[1])
            return
        async with client.open_events(MESSAGES, payload) as data:
            yield ended(self._name, self._events(data, translator, relay), translator)

    async def _events(
        self, data: AsyncIterator[str], translator: MessagesTranslator, relay: bool
    ) -> AsyncIterator[Event]:
        async for text in data:
            event = orjson.loads(text)
            if relay and isinstance(event, dict):
                yield passthrough.relayed(event)
            if isinstance(event, dict) and event.get("type") == "error":
                raise ReportedError(self._reported(event.get("error")))
            for converted in translator.event(event):
                yield converted
            if isinstance(event, dict) and event.get("type") == "message_stop":
                break
        else:
            raise EOFError  # the stream ended without ``message_stop``
        if not translator.finished:
            raise MalformedAnswer("the message ended without a stop_reason")

    def _reported(self, error: object) -> str:
        """The message of a stream's ``error`` event, naming the provider; an overloaded
        provider is said to be so, so a client knows to try again."""
        fields = error if isinstance(error, dict) else {}
        kind, message = fields.get("type"), fields.get("message") or str(error)
        detail = scrub(str(message), self._client.settings)
        if kind == "overloaded_error":
            return (
                f"The upstream provider '{self._name}' is overloaded; try again shortly ({detail})."
            )
        return f"The upstream provider '{self._name}' reported an error: {detail}"
