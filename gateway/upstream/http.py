"""One exchange with a provider: deadlines, size caps, and failures as domain errors.

Each provider gets a :class:`ProviderClient`: an aiohttp session of its own, bounded to
``max_connections`` requests at once. (aiohttp costs about a fifth of the CPU per call
that httpx does; a gateway makes one such call per turn.)

Secrets (the API key and every configured header value) never appear in an error
message or a log line, and relayed provider messages are cut to a readable length.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from ..config import ProviderSettings
from .chat_request import TranslatedInputs
from .errors import (
    UpstreamAuthFailed,
    UpstreamBusy,
    UpstreamError,
    UpstreamInvalidResponse,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnreachable,
)
from .translation_cache import EncodedInputs

logger = logging.getLogger("gateway.upstream")

MAX_RELAYED_MESSAGE = 1000
_ERROR_BODY_LIMIT = 64 * 1024

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


def _data(payload: Body) -> bytes | JSONPieces:
    if isinstance(payload, dict):
        return orjson.dumps(payload)
    return payload[0] if len(payload) == 1 else JSONPieces(payload)


def scrub(text: str, settings: ProviderSettings) -> str:
    """``text`` without the provider's secrets, cut to :data:`MAX_RELAYED_MESSAGE`."""
    for secret in (settings.api_key or "", *settings.headers.values()):
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    if len(text) > MAX_RELAYED_MESSAGE:
        text = text[:MAX_RELAYED_MESSAGE] + "…"
    return text


def _error_fields(content: bytes) -> tuple[str, str | None, str | None]:
    """The message, type and code of an upstream error body, whatever its shape."""
    try:
        body: Any = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content.decode("utf-8", "replace"), None, None
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or orjson.dumps(error).decode()
        kind, code = error.get("type"), error.get("code")
        return (
            str(message),
            kind if isinstance(kind, str) else None,
            str(code) if isinstance(code, str | int) else None,
        )
    return str(error), None, None


def describe_stream_failure(name: str, error: BaseException) -> str:
    """The message recorded when an answer breaks after it started."""
    if isinstance(error, UpstreamError):
        return error.message
    if isinstance(error, TimeoutError):
        return f"The upstream provider '{name}' stopped answering mid-stream."
    return f"The answer from upstream provider '{name}' broke off ({type(error).__name__})."


class ProviderClient:
    """Requests to one provider, with its settings, secrets and limits applied."""

    def __init__(self, name: str, settings: ProviderSettings, session: aiohttp.ClientSession):
        self.name = name
        self.settings = settings
        self._session = session
        self._slots = asyncio.Semaphore(settings.max_connections)
        self._headers = {**settings.headers, "Content-Type": "application/json"}
        if settings.wire_api == "anthropic":
            self._headers["anthropic-version"] = settings.anthropic_version
            if settings.anthropic_beta:
                self._headers["anthropic-beta"] = settings.anthropic_beta
            if settings.api_key:
                self._headers["x-api-key"] = settings.api_key
        elif settings.api_key:
            self._headers["Authorization"] = f"Bearer {settings.api_key}"
        self._base_url = (settings.base_url or "").rstrip("/")
        # A whole answer, and a stream's head, are bounded by ``timeout_seconds`` around
        # the exchange: no read timer, which aiohttp would set again on every chunk
        # received (a stream's silences get one once its head is in).
        self._answer_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=settings.connect_timeout_seconds
        )
        # The provider's last requests as chat messages (for a Chat Completions provider)
        # or as JSON (for a Responses provider).
        self.translated = TranslatedInputs()
        self.encoded = EncodedInputs()

    @classmethod
    @asynccontextmanager
    async def connect(cls, name: str, settings: ProviderSettings) -> AsyncIterator[ProviderClient]:
        connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True)
        async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:
            yield cls(name, settings, session)

    # -- one exchange ------------------------------------------------------------------

    def _error(self, kind: type[UpstreamError], message: str) -> UpstreamError:
        return kind(self.name, f"The upstream provider '{self.name}' {message}")

    async def _acquire(self) -> None:
        """Take one of the provider's connection slots, waiting ``pool_timeout_seconds``."""
        if not self._slots.locked():  # a free slot needs no timer
            await self._slots.acquire()
            return
        try:
            async with asyncio.timeout(self.settings.pool_timeout_seconds):
                await self._slots.acquire()
        except TimeoutError:
            logger.warning(
                "upstream %s: all %d connections busy", self.name, self.settings.max_connections
            )
            raise self._error(
                UpstreamBusy, "has all its connections busy; try again shortly."
            ) from None

    async def _post(
        self, path: str, payload: Body, limits: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        """POST ``payload`` (or its JSON) in a slot taken; the response once it is a success."""
        try:
            response = await self._session.post(
                self._base_url + path,
                data=_data(payload),
                headers=self._headers,
                timeout=limits,
                allow_redirects=False,
            )
        except TimeoutError:
            logger.warning("upstream %s timed out", self.name)
            raise self._error(UpstreamTimeout, "did not answer in time.") from None
        except aiohttp.ClientError as error:
            logger.warning("upstream %s unreachable: %s", self.name, type(error).__name__)
            raise self._error(
                UpstreamUnreachable, f"could not be reached ({type(error).__name__})."
            ) from None
        if response.status >= 400:
            try:
                raise await self._refusal(response)
            finally:
                response.release()
        return response

    async def _refusal(self, response: aiohttp.ClientResponse) -> UpstreamError:
        status = response.status
        try:
            content = await response.content.read(_ERROR_BODY_LIMIT)
        except (aiohttp.ClientError, TimeoutError):
            content = b""
        message, kind, code = _error_fields(content)
        message = scrub(message, self.settings)
        logger.warning("upstream %s answered HTTP %d", self.name, status)
        if status in (401, 403, 407):
            return self._error(
                UpstreamAuthFailed, f"rejected the gateway's credentials (HTTP {status})."
            )
        if status == 429:
            described = f"is rate limiting requests: {message}"
        elif status >= 500:
            described = f"failed (HTTP {status}): {message}"
        else:
            described = f"rejected the request (HTTP {status}): {message}"
        return UpstreamRejected(
            self.name,
            f"The upstream provider '{self.name}' {described}",
            status=status,
            type=kind,
            code=code,
            retry_after=response.headers.get("Retry-After"),
        )

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes:
        limit = self.settings.max_response_bytes
        length = response.content_length
        if length is not None and length <= limit:
            return await response.read()  # a declared length: aiohttp reads no further
        body = bytearray()
        async for chunk in response.content.iter_any():
            body += chunk
            if len(body) > limit:
                raise self._error(
                    UpstreamInvalidResponse, f"sent an answer larger than {limit} bytes."
                )
        return bytes(body)

    async def fetch_json(self, path: str, payload: Body) -> dict[str, Any]:
        """A whole JSON object answer within ``timeout_seconds``, dripping bodies included."""
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                await self._acquire()
                try:
                    response = await self._post(path, payload, self._answer_timeout)
                    try:
                        content = await self._read_capped(response)
                    finally:
                        response.release()
                finally:
                    self._slots.release()
        except TimeoutError:
            logger.warning("upstream %s timed out", self.name)
            raise self._error(UpstreamTimeout, "did not answer in time.") from None
        except aiohttp.ClientError as error:
            raise self._error(
                UpstreamUnreachable, f"broke off its answer ({type(error).__name__})."
            ) from None
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            raise self._error(
                UpstreamInvalidResponse, "answered with something other than a JSON object."
            )
        return body

    @asynccontextmanager
    async def open_events(self, path: str, payload: Body) -> AsyncIterator[AsyncIterator[str]]:
        """Start a streamed answer; yield the ``data`` of its server-sent events.

        Response headers must arrive within ``timeout_seconds``; then each chunk within
        ``stream_idle_timeout_seconds``; the stream may not pass ``max_response_bytes``.
        """
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                await self._acquire()
                try:
                    response = await self._post(path, payload, self._answer_timeout)
                except BaseException:
                    self._slots.release()
                    raise
        except TimeoutError:
            raise self._error(UpstreamTimeout, "did not answer in time.") from None
        self._time_silences(response)
        try:
            yield self._sse_data(response)
        finally:
            response.release()
            self._slots.release()

    def _time_silences(self, response: aiohttp.ClientResponse) -> None:
        """Bound each silence of a stream whose head is in by ``stream_idle_timeout_seconds``.

        aiohttp's socket read timer, set for the request, would also bound the wait for
        the head; started now, it fails the body's next read when it runs out.
        """
        connection = response.connection
        protocol = None if connection is None else connection.protocol
        if protocol is not None:  # else the whole body is in and the connection released
            protocol.read_timeout = self.settings.stream_idle_timeout_seconds
            protocol.start_timeout()

    async def _sse_data(self, response: aiohttp.ClientResponse) -> AsyncIterator[str]:
        """The ``data`` of each complete server-sent event (an unterminated last one is dropped)."""
        limit = self.settings.max_response_bytes
        size = 0
        pending = b""
        data: list[str] = []
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise self._error(
                    UpstreamInvalidResponse, f"sent an answer larger than {limit} bytes."
                )
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for raw in lines:
                line = raw.rstrip(b"\r")
                if not line:
                    if data:
                        yield "\n".join(data)
                        data = []
                elif line.startswith(b"data:"):
                    value = line[5:]
                    data.append((value[1:] if value.startswith(b" ") else value).decode())
