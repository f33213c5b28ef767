"""One exchange with a provider: deadlines, size caps, and failures as domain errors.

Each provider gets a :class:`ProviderClient`: an aiohttp session of its own, bounded to
``max_connections`` requests at once. (aiohttp costs about a fifth of the CPU per call
that httpx does; a gateway makes one such call per turn.)

Secrets (the API key and every configured header value) never appear in an error
message or a log line, and relayed provider messages are cut to a readable length.

Every failure names the provider, its ``host:port`` and what happened (the name that
did not resolve, the TLS failure, the errno of a refusal or reset, the limit that ran
out, the provider's own message); the warning logged with it also names the request's
URL. At DEBUG, each request's URL, status and time to its answer's head are logged.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import aiohttp
import orjson

from ...config import ProviderSettings
from ...tracing import upstream_headers
from ..errors import (
    UpstreamAuthFailed,
    UpstreamBusy,
    UpstreamError,
    UpstreamInvalidResponse,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnreachable,
)
from .failures import (
    connection_failure,
    error_fields,
    host_and_port,
    scrub,
)
from .payloads import Body, request_data
from .rate_limits import retry_after

logger = logging.getLogger("gateway.upstream")

_ERROR_BODY_LIMIT = 64 * 1024
T = TypeVar("T")


class ProviderClient:
    """Requests to one provider, with its settings, secrets and limits applied."""

    def __init__(self, name: str, settings: ProviderSettings, session: aiohttp.ClientSession):
        self.name = name
        self.settings = settings
        self._session = session
        self._slots = asyncio.Semaphore(settings.max_connections)
        self._headers = {**settings.headers, "Content-Type": "application/json"}
        for header, setting in settings.wire.setting_headers.items():
            if value := getattr(settings, setting):
                self._headers[header] = value
        if settings.api_key:
            self._headers.update(settings.wire.key_headers(settings.api_key))
        self._base_url = (settings.base_url or "").rstrip("/")
        # Where the provider is, as errors and log lines name it: ``host:port``, and the
        # base URL without credentials or query (``base_path`` is the URL's path).
        self.where, self._shown_url = host_and_port(self._base_url)
        self._base_path = urlsplit(self._base_url).path
        # A whole answer, and a stream's head, are bounded by ``timeout_seconds`` around
        # the exchange: no read timer, which aiohttp would set again on every chunk
        # received (a stream's silences get one once its head is in).
        self._answer_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=settings.connect_timeout_seconds
        )
        # What the wire's adapter keeps of the provider's last requests, one of each kind.
        self._caches: dict[type[Any], Any] = {}

    @classmethod
    @asynccontextmanager
    async def connect(cls, name: str, settings: ProviderSettings) -> AsyncIterator[ProviderClient]:
        connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True)
        async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:
            yield cls(name, settings, session)

    def connections_in_use(self) -> int:
        """How many of the provider's ``max_connections`` slots are taken now (read when
        ``/metrics`` is scraped)."""
        return self.settings.max_connections - self._slots._value

    def with_key(self, key: str) -> ProviderClient:
        """This client sending ``key`` (one of ``api_keys``): the same connections, limits
        and caches."""
        keyed = copy.copy(self)
        keyed._headers = {**self._headers, **self.settings.wire.key_headers(key)}
        return keyed

    def cache(self, kind: type[T]) -> T:
        """The provider's one ``kind`` (made on first use), shared by every key's client:
        where a wire's adapter keeps its translations of the provider's last requests."""
        made = self._caches.get(kind)
        if made is None:
            made = self._caches[kind] = kind()
        return cast(T, made)

    def with_headers(self, headers: dict[str, str]) -> ProviderClient:
        """This client sending ``headers`` too (over its own of the same names)."""
        changed = copy.copy(self)
        changed._headers = {**self._headers, **headers}
        return changed

    # -- one exchange ------------------------------------------------------------------

    def _error(self, kind: type[UpstreamError], message: str) -> UpstreamError:
        return kind(self.name, f"The upstream provider '{self.name}' at {self.where} {message}")

    def _failure(self, kind: type[UpstreamError], path: str, described: str) -> UpstreamError:
        """A ``kind`` of error saying what ``described`` says, logged with its request."""
        logger.warning("upstream %s: POST %s%s %s", self.name, self._shown_url, path, described)
        return self._error(kind, f"{described}.")

    def _no_first_event(self, path: str) -> UpstreamError:
        limit = self.settings.timeout_seconds
        described = f"timed out: no stream event within timeout_seconds={limit:g}"
        return self._failure(UpstreamTimeout, path, described)

    def _timed_out(self, path: str) -> UpstreamError:
        limit = self.settings.timeout_seconds
        described = f"timed out: no answer within timeout_seconds={limit:g}"
        return self._failure(UpstreamTimeout, path, described)

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
        debug = logger.isEnabledFor(logging.DEBUG)
        start = time.perf_counter() if debug else 0.0
        traced = upstream_headers()  # the attempt's span, when traced
        try:
            response = await self._session.post(
                self._base_url + path,
                data=request_data(payload),
                headers={**self._headers, **traced} if traced else self._headers,
                timeout=limits,
                allow_redirects=False,
            )
        except aiohttp.ConnectionTimeoutError:
            limit = self.settings.connect_timeout_seconds
            described = f"timed out: no connection within connect_timeout_seconds={limit:g}"
            raise self._failure(UpstreamTimeout, path, described) from None
        except TimeoutError:
            raise self._timed_out(path) from None
        except aiohttp.ClientConnectorError as error:
            described = f"could not be reached: {connection_failure(error)}"
            raise self._failure(
                UpstreamUnreachable, path, scrub(described, self.settings)
            ) from None
        except aiohttp.ClientError as error:
            described = f"broke off the exchange: {connection_failure(error)}"
            raise self._failure(
                UpstreamUnreachable, path, scrub(described, self.settings)
            ) from None
        if debug:
            elapsed = (time.perf_counter() - start) * 1000
            logger.debug(
                "upstream %s: POST %s%s answered HTTP %d in %.1f ms",
                self.name,
                self._shown_url,
                path,
                response.status,
                elapsed,
            )
        if response.status >= 400:
            try:
                raise await self._refusal(path, response)
            finally:
                response.release()
        return response

    async def _refusal(self, path: str, response: aiohttp.ClientResponse) -> UpstreamError:
        """The provider's error status as an error that relays its own message."""
        status = response.status
        try:
            content = await response.content.read(_ERROR_BODY_LIMIT)
        except (aiohttp.ClientError, TimeoutError):
            content = b""
        message, kind, code = error_fields(content)
        detail = scrub(message, self.settings).strip() or "(empty body)"
        logger.warning(
            "upstream %s answered HTTP %d to POST %s%s: %s",
            self.name,
            status,
            self._shown_url,
            path,
            detail,
        )
        if status in (401, 403, 407):
            return self._error(
                UpstreamAuthFailed, f"rejected the gateway's credentials (HTTP {status}): {detail}"
            )
        if status == 404 and code != "model_not_found" and "model" not in message.lower():
            described = (
                f"answered HTTP 404: POST {self._base_path}{path} not found at {self.where}"
                f" — check providers.{self.name}.base_url; its answer: {detail}"
            )
        elif status == 429:
            described = f"at {self.where} is rate limiting requests: {detail}"
        elif status >= 500:
            described = f"at {self.where} failed (HTTP {status}): {detail}"
        else:
            described = f"at {self.where} rejected the request (HTTP {status}): {detail}"
        return UpstreamRejected(
            self.name,
            f"The upstream provider '{self.name}' {described}",
            status=status,
            type=kind,
            code=code,
            retry_after=retry_after(response.headers, status, time.time()),
        )

    def _too_large(self, path: str) -> UpstreamError:
        limit = self.settings.max_response_bytes
        described = f"sent an answer larger than max_response_bytes={limit}"
        return self._failure(UpstreamInvalidResponse, path, described)

    async def _read_capped(self, path: str, response: aiohttp.ClientResponse) -> bytes:
        limit = self.settings.max_response_bytes
        length = response.content_length
        if length is not None and length <= limit:
            return await response.read()  # a declared length: aiohttp reads no further
        body = bytearray()
        async for chunk in response.content.iter_any():
            body += chunk
            if len(body) > limit:
                raise self._too_large(path)
        return bytes(body)

    async def fetch_json(self, path: str, payload: Body) -> dict[str, Any]:
        """A whole JSON object answer within ``timeout_seconds``, dripping bodies included."""
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                await self._acquire()
                try:
                    response = await self._post(path, payload, self._answer_timeout)
                    try:
                        content = await self._read_capped(path, response)
                    finally:
                        response.release()
                finally:
                    self._slots.release()
        except TimeoutError:
            raise self._timed_out(path) from None
        except aiohttp.ClientError as error:
            described = f"broke off its answer: {connection_failure(error)}"
            raise self._failure(
                UpstreamUnreachable, path, scrub(described, self.settings)
            ) from None
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            described = "answered with something other than a JSON object"
            raise self._failure(UpstreamInvalidResponse, path, described)
        return body

    @asynccontextmanager
    async def open_events(self, path: str, payload: Body) -> AsyncIterator[AsyncIterator[str]]:
        """Start a streamed answer; yield the ``data`` of its server-sent events.

        The first event must arrive within ``timeout_seconds`` (as a whole non-streamed
        answer must), else this fails as that request would, before the stream starts;
        then each event within ``stream_idle_timeout_seconds`` of the one before (bytes
        that never make an event do not count); the stream may not pass
        ``max_response_bytes``.
        """
        deadline = asyncio.get_running_loop().time() + self.settings.timeout_seconds
        try:
            async with asyncio.timeout_at(deadline):
                await self._acquire()
                try:
                    response = await self._post(path, payload, self._answer_timeout)
                except BaseException:
                    self._slots.release()
                    raise
        except TimeoutError:
            raise self._timed_out(path) from None
        events = self._sse_data(path, response, deadline)
        try:
            self._time_silences(response)
            first = await anext(events, None)
            yield _starting_with(first, events)
        finally:
            await events.aclose()
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

    async def _sse_data(
        self, path: str, response: aiohttp.ClientResponse, deadline: float
    ) -> AsyncGenerator[str]:
        """The ``data`` of each complete server-sent event (an unterminated last one is
        dropped), the first by ``deadline`` (loop time), each next one within
        ``stream_idle_timeout_seconds``; a stream that breaks off or falls silent ends in
        an :class:`UpstreamError` saying how."""
        limit = self.settings.max_response_bytes
        loop = asyncio.get_running_loop()
        chunks = aiter(response.content.iter_any())
        started = False
        size = 0
        pending = b""
        data: list[str] = []
        try:
            while True:
                # Timed per read, not around the ``yield``: the consumer's own time between
                # two events is not the upstream's silence.
                async with asyncio.timeout_at(deadline):
                    chunk = await anext(chunks, b"")
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise self._too_large(path)
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for raw in lines:
                    line = raw.rstrip(b"\r")
                    if not line:
                        if data:
                            yield "\n".join(data)
                            data = []
                            started = True
                            deadline = loop.time() + self.settings.stream_idle_timeout_seconds
                    elif line.startswith(b"data:"):
                        value = line[5:]
                        data.append((value[1:] if value.startswith(b" ") else value).decode())
        except TimeoutError:
            if not started and loop.time() >= deadline:
                raise self._no_first_event(path) from None
            idle = self.settings.stream_idle_timeout_seconds
            described = (
                f"went silent mid-stream: no data within stream_idle_timeout_seconds={idle:g}"
            )
            raise self._failure(UpstreamTimeout, path, described) from None
        except aiohttp.ClientError as error:
            described = f"broke off its answer mid-stream: {connection_failure(error)}"
            raise self._failure(
                UpstreamUnreachable, path, scrub(described, self.settings)
            ) from None


async def _starting_with(first: str | None, rest: AsyncIterator[str]) -> AsyncIterator[str]:
    """``first`` (unless the stream ended before any event), then ``rest``."""
    if first is None:
        return
    yield first
    async for data in rest:
        yield data
