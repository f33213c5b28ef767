"""The adapter for any Chat Completions API (DeepSeek, Qwen, Ollama, vLLM, llama.cpp, …)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson

from ...base import NONE, Replay, UpstreamStream
from ...errors import MalformedAnswer, UpstreamInvalidResponse
from ...reasoning_state import ReasoningState
from ...results import Event, Item
from ...streams import ReportedError, ended
from ...transport.failures import scrub
from ...transport.http import ProviderClient
from .request import TranslatedInputs, to_chat_request
from .response import ChatTranslator


class ChatCompletionsUpstream:
    capabilities = NONE

    def __init__(self, client: ProviderClient, state: ReasoningState | None = None) -> None:
        self._client = client
        self._name = client.name
        self._settings = client.settings
        self._state = state

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        chat = to_chat_request(
            request,
            model=request["model"],
            stream=stream,
            translated=self._client.cache(TranslatedInputs),
            state=self._state,
        )
        # No built-in tools reach a chat provider, so ``max_tool_calls`` limits nothing here.
        summary = (request.get("reasoning") or {}).get("summary") is not None
        translator = ChatTranslator(chat.tool_names, summary, self._state)
        if not stream:
            body = await self._client.fetch_json("/chat/completions", chat.encoded())
            try:
                translator.completion(body)
            except MalformedAnswer as error:
                raise UpstreamInvalidResponse(
                    self._name,
                    f"The upstream provider '{self._name}' sent an invalid answer: {error}.",
                ) from None
            # A whole answer is read for its result alone, as from a Responses upstream.
            yield Replay([], translator.finish()[1])
            return
        async with self._client.open_events("/chat/completions", chat.encoded()) as data:
            yield ended(self._name, self._events(data, translator), translator)

    async def _events(
        self, data: AsyncIterator[str], translator: ChatTranslator
    ) -> AsyncIterator[Event]:
        done = False
        async for text in data:
            stripped = text.strip()
            if stripped == "[DONE]":
                done = True
                break
            if not stripped:
                continue
            chunk = orjson.loads(text)
            if isinstance(chunk, dict) and chunk.get("error"):
                error = chunk["error"]
                detail = error.get("message", error) if isinstance(error, dict) else error
                raise ReportedError(
                    f"The upstream provider '{self._name}' reported an error: "
                    f"{scrub(str(detail), self._settings)}"
                )
            for event in translator.chunk(chunk):
                yield event
        if not (done and translator.finished):
            raise EOFError
