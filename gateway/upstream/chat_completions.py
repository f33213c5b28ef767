"""The adapter for any Chat Completions API (DeepSeek, Qwen, Ollama, vLLM, llama.cpp, …)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import orjson

from .base import NONE, Replay, UpstreamStream
from .chat_request import to_chat_request
from .chat_response import ChatTranslator, MalformedAnswer
from .errors import UpstreamError, UpstreamInvalidResponse
from .http import ProviderClient, describe_stream_failure, scrub
from .reasoning_state import ReasoningState
from .results import Item


class UpstreamReportedError(Exception):
    """An error the provider reported inside a stream that had already started."""


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
            translated=self._client.translated,
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
            yield self._stream(data, translator)

    async def _stream(self, data: AsyncIterator[str], translator: ChatTranslator) -> UpstreamStream:
        done = False
        try:
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
                    raise UpstreamReportedError(scrub(str(detail), self._settings))
                for event in translator.chunk(chunk):
                    yield event
            if not (done and translator.finished):
                raise EOFError
        except UpstreamReportedError as error:
            closing, result = translator.fail(
                f"The upstream provider '{self._name}' reported an error: {error}"
            )
        except EOFError:
            closing, result = translator.fail(
                f"The answer from upstream provider '{self._name}' ended before it was complete."
            )
        except MalformedAnswer as error:
            closing, result = translator.fail(
                f"The upstream provider '{self._name}' sent an invalid stream chunk: {error}."
            )
        except (aiohttp.ClientError, TimeoutError, UpstreamError, ValueError) as error:
            closing, result = translator.fail(describe_stream_failure(self._name, error))
        else:
            closing, result = translator.finish()
        for event in closing:
            yield event
        yield result
