"""The adapter for any Chat Completions API (DeepSeek, Qwen, Ollama, vLLM, llama.cpp, …)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from httpx_sse import EventSource

from ..config import ProviderSettings
from ..errors import invalid_request
from .base import UpstreamStream
from .chat_request import UnsupportedInput, to_chat_request
from .chat_response import ChatTranslator
from .http import UpstreamStreamError, describe_stream_failure, post
from .results import Item


class ChatCompletionsUpstream:
    def __init__(self, client: httpx.AsyncClient, name: str, settings: ProviderSettings) -> None:
        self._client = client
        self._name = name
        self._settings = settings

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        try:
            chat = to_chat_request(request, model=request["model"], stream=stream)
        except UnsupportedInput as error:
            raise invalid_request(str(error), param=error.param, code="unsupported_input") from None
        translator = ChatTranslator(chat.tool_names)
        async with post(
            self._client, self._name, self._settings, "/chat/completions", chat.payload
        ) as response:
            if stream:
                yield self._stream(response, translator)
            else:
                yield self._whole(response, translator)

    async def _whole(self, response: httpx.Response, translator: ChatTranslator) -> UpstreamStream:
        events: list[Item] = []
        try:
            events = translator.completion(json.loads(await response.aread()))
        except (httpx.HTTPError, ValueError, AttributeError) as error:
            closing, result = translator.fail(describe_stream_failure(self._name, error))
        else:
            closing, result = translator.finish()
        for event in [*events, *closing]:
            yield event
        yield result

    async def _stream(self, response: httpx.Response, translator: ChatTranslator) -> UpstreamStream:
        try:
            async for sse in EventSource(response).aiter_sse():
                data = sse.data.strip()
                if data == "[DONE]":
                    break
                if not data:
                    continue
                chunk = json.loads(data)
                if chunk.get("error"):
                    raise UpstreamStreamError(str(chunk["error"].get("message", chunk["error"])))
                for event in translator.chunk(chunk):
                    yield event
        except UpstreamStreamError as error:
            message = f"The upstream provider '{self._name}' reported an error: {error}"
            closing, result = translator.fail(message)
        except (httpx.HTTPError, ValueError, AttributeError) as error:
            closing, result = translator.fail(describe_stream_failure(self._name, error))
        else:
            closing, result = translator.finish()
        for event in closing:
            yield event
        yield result
