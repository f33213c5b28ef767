"""Routing a turn: which deployment and key to try, in what order, and when to try again.

A model's deployments (and a provider's keys) are tried by weight, those cooling down
last (the one whose cooldown ends first before the others), then the model's fallbacks.
A call that fails before any output (a refused connection, a time-out, HTTP 429, 5xx or
529, an error event before the first delta) is tried again on the next candidate after
a backoff; after the first output delta nothing is tried again: the client sees one
answer. A deployment or key that keeps failing cools down (:class:`Cooldowns`). A key
with ``requests_per_minute`` takes each call from a bucket every instance shares; a key
whose bucket is empty is passed over as if it had answered 429, without a call.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ...config import GatewayConfig, Route
from ...routing_settings import ProviderKey, RetrySettings
from ..base import Capabilities, Upstream, UpstreamStream
from ..errors import (
    UpstreamBusy,
    UpstreamError,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnreachable,
    is_context_overflow,
)
from ..results import Event, Item, TurnResult
from .cooldowns import Cooldowns

T = TypeVar("T")
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
BACKOFF_SECONDS = 0.25


@dataclass(frozen=True)
class Candidate:
    """One way to answer a turn: a deployment of ``model`` and one of its provider's keys."""

    model: str  # as clients name it (a fallback's differs from the request's)
    route: Route
    key: ProviderKey | None = None
    key_index: int = 0

    @property
    def key_name(self) -> str:
        return f"{self.route.provider_name}#{self.key_index}"


def _by_weight(
    entries: list[Any],
    weight: Callable[[Any], float],
    until: Callable[[Any], float],
    rng: random.Random,
) -> list[Any]:
    """``entries`` in a weighted random order, those resting last by the end of their rest."""
    if len(entries) == 1:
        return entries
    ready = [entry for entry in entries if not until(entry)]
    ordered: list[Any] = []
    while ready:
        point = rng.uniform(0, sum(weight(entry) for entry in ready))
        chosen = len(ready) - 1
        for index, entry in enumerate(ready):
            point -= weight(entry)
            if point <= 0:
                chosen = index
                break
        ordered.append(ready.pop(chosen))  # by position: entries compare deeply
    return ordered + sorted((e for e in entries if until(e)), key=until)


def plan(
    config: GatewayConfig, model: str, cooldowns: Cooldowns, rng: random.Random
) -> list[list[Candidate]]:
    """The candidates of ``model`` and of each of its fallbacks (one list per model)."""
    plans: list[list[Candidate]] = []
    for name in config.fallback_order(model):
        routes = _by_weight(
            config.routes(name), lambda r: r.weight, lambda r: cooldowns.until(r.deployment), rng
        )
        plans.append([c for route in routes for c in _keyed(name, route, cooldowns, rng)])
    return plans


def _keyed(model: str, route: Route, cooldowns: Cooldowns, rng: random.Random) -> list[Candidate]:
    keys = route.provider.api_keys
    if not keys:
        return [Candidate(model, route)]
    candidates = [Candidate(model, route, key, index) for index, key in enumerate(keys)]
    return _by_weight(
        candidates,
        lambda c: c.key.weight if c.key else 1.0,
        lambda c: cooldowns.until(c.key_name),
        rng,
    )


def retry_after_seconds(error: UpstreamError) -> float | None:
    if isinstance(error, UpstreamRejected) and error.retry_after:
        try:
            return max(0.0, float(error.retry_after))
        except ValueError:
            return None
    return None


def retryable(error: UpstreamError) -> bool:
    if isinstance(error, UpstreamRejected):
        return error.status in RETRYABLE_STATUSES
    return isinstance(error, UpstreamUnreachable | UpstreamTimeout | UpstreamBusy)


class FailedBeforeOutput(Exception):
    """An upstream stream that failed before its first output delta: worth another try."""

    def __init__(self, result: TurnResult) -> None:
        super().__init__(str((result.error or {}).get("message") or "failed"))
        self.result = result


@dataclass
class Attempt:
    """One call of a turn, for the stored record and the log."""

    deployment: str
    key: str
    outcome: str  # "answered", or why it failed
    seconds: float

    def as_item(self) -> Item:
        return {
            "deployment": self.deployment,
            "key": self.key,
            "outcome": self.outcome,
            "seconds": round(self.seconds, 3),
        }


Opener = Callable[[Candidate], Upstream]
KeyRate = Callable[[Candidate], Awaitable[float]]
"""Takes one call from a candidate key's shared bucket: 0.0, or the seconds to wait."""


async def unlimited(candidate: Candidate) -> float:
    return 0.0


class Answered(Protocol):
    """Told which candidate answered a turn (its affinity, see :mod:`.affinity`)."""

    async def answered(self, candidate: Candidate, attempts: list[Attempt]) -> None: ...

    def item(self) -> Item | None:
        """What the turn's route records of it."""
        ...


@dataclass(frozen=True)
class Failed:
    """Why no candidate of a plan answered."""

    error: Exception


@dataclass
class _Opened:
    """A candidate's answer: its stream, open in ``stack``, and what was read of it."""

    stack: AsyncExitStack
    head: list[Event | TurnResult]
    events: UpstreamStream


class RoutedUpstream:
    """An upstream that is a model's plan: tried candidate by candidate until one answers."""

    def __init__(
        self,
        plans: list[list[Candidate]],
        context_plans: list[list[Candidate]],
        opener: Opener,
        cooldowns: Cooldowns,
        retries: Callable[[str], RetrySettings],
        observe: Callable[[str, Candidate, str], None],
        key_rate: KeyRate = unlimited,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        affinity: Answered | None = None,
    ) -> None:
        self._key_rate = key_rate
        self._affinity = affinity
        self._plans = plans
        self._context_plans = context_plans  # for a request too long for ``plans``
        self._opener = opener
        self._cooldowns = cooldowns
        self._retries = retries
        # (what happened, candidate, detail): "answered", "failed" (detail: the outcome),
        # "retry" (detail: the failed attempt's outcome), "cooldown", "fallback"
        self._observe = observe
        self._sleep = sleep
        self.capabilities = self._routed_capabilities()
        self.attempts: list[Attempt] = []

    def _routed_capabilities(self) -> Capabilities:
        """Counting and compacting routed like answers (the same candidates, retries,
        cooldowns and fallbacks), where every deployment the plans may reach can do them:
        else the gateway does them itself, the same way whichever deployment answers."""
        reached = {c.route.deployment: c for p in [*self._plans, *self._context_plans] for c in p}
        offered = [self._opener(candidate).capabilities for candidate in reached.values()]
        return Capabilities(
            count_input_tokens=self._count if all(c.count_input_tokens for c in offered) else None,
            compact=self._compact if all(c.compact for c in offered) else None,
        )

    async def _count(self, request: Item) -> int:
        async def count(candidate: Candidate) -> int:
            counted = self._opener(candidate).capabilities.count_input_tokens
            assert counted is not None  # every deployment counts (see above)
            return await counted({**request, "model": candidate.route.upstream_model})

        return await self._across_plans(count)

    async def _compact(self, request: Item) -> Item:
        async def compact(candidate: Candidate) -> Item:
            compacted = self._opener(candidate).capabilities.compact
            assert compacted is not None  # every deployment compacts (see above)
            return await compacted({**request, "model": candidate.route.upstream_model})

        return await self._across_plans(compact)

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        async def attempt(candidate: Candidate) -> _Opened:
            sent = {**request, "model": candidate.route.upstream_model}
            stack = AsyncExitStack()
            try:
                upstream = self._opener(candidate)
                events = await stack.enter_async_context(upstream.open(sent, stream=stream))
                return _Opened(stack, await _head(events), events)
            except BaseException:
                await stack.aclose()
                raise

        try:
            opened = await self._across_plans(attempt)
        except FailedBeforeOutput as failed:  # every candidate failed so: its answer stands
            yield _replayed(failed.result, self.route_item())
            return
        async with opened.stack:
            yield self._relay(opened.head, opened.events)

    async def _across_plans(self, attempt: Callable[[Candidate], Awaitable[T]]) -> T:
        """What ``attempt`` gets of the first candidate that answers: the model's, then each
        fallback's in turn (a request too long for them: the larger models'); else the
        last error."""
        plans, spare = deque(self._plans), list(self._context_plans)
        last_error: Exception | None = None
        while plans:
            candidates = plans.popleft()
            if last_error is not None:
                self._observe("fallback", candidates[0], str(last_error))
            answered = await self._first_answer(candidates, attempt)
            if not isinstance(answered, Failed):
                return answered
            last_error = answered.error
            if isinstance(last_error, UpstreamError) and not retryable(last_error):
                if not (spare and is_context_overflow(last_error)):
                    raise last_error
                plans, spare = deque(spare), []  # a model with a larger window
        assert last_error is not None
        raise last_error

    async def _first_answer(
        self, candidates: list[Candidate], attempt: Callable[[Candidate], Awaitable[T]]
    ) -> T | Failed:
        """What ``attempt`` gets of the first of ``candidates`` to answer (a stream: open,
        read up to its first output delta), within the model's retries; else the last error."""
        retry = self._retries(candidates[0].model)
        candidate, waited = candidates[0], 0.0
        error: Exception | None = None
        for tries in range(retry.attempts or len(candidates)):
            if error is not None:
                following = _after(candidates, candidate, error)
                if following.route.deployment == candidate.route.deployment:
                    pause = self._pause(error, tries, retry)
                    if waited + pause > retry.max_wait_seconds:
                        break
                    waited += pause
                    await self._sleep(pause)
                self._observe("retry", candidate, _outcome(error))
                candidate = following
            started = time.monotonic()
            try:
                await self._take_key(candidate)
                answered = await attempt(candidate)
            except (UpstreamError, FailedBeforeOutput) as failed:
                await self._failed(candidate, failed, started)
                if isinstance(failed, UpstreamError) and not retryable(failed):
                    return Failed(failed)
                error = failed
                continue
            await self._answered(candidate, started)
            return answered
        assert error is not None
        return Failed(error)

    @staticmethod
    def _pause(error: Exception, tries: int, retry: RetrySettings) -> float:
        """How long to wait before trying the same deployment again: its ``Retry-After``,
        else an exponential backoff with full jitter; never past ``max_wait_seconds``."""
        given = retry_after_seconds(error) if isinstance(error, UpstreamError) else None
        if given is not None:
            return min(given, retry.max_wait_seconds)
        return random.uniform(0, min(BACKOFF_SECONDS * 2 ** (tries - 1), retry.max_wait_seconds))

    async def _take_key(self, candidate: Candidate) -> None:
        """Take the call from the key's shared bucket, or fail as the provider would."""
        wait = await self._key_rate(candidate)
        if wait > 0:
            raise UpstreamRejected(
                candidate.route.provider_name,
                f"The key {candidate.key_name} is at its requests_per_minute "
                f"({candidate.key.requests_per_minute if candidate.key else '-'}).",
                status=429,
                code="rate_limit_exceeded",
                retry_after=str(max(1, math.ceil(wait))),
            )

    async def _failed(self, candidate: Candidate, error: Exception, started: float) -> None:
        outcome = _outcome(error)
        self.attempts.append(
            Attempt(
                candidate.route.deployment, candidate.key_name, outcome, time.monotonic() - started
            )
        )
        self._observe("failed", candidate, outcome)
        after = retry_after_seconds(error) if isinstance(error, UpstreamError) else None
        name = candidate.key_name if _is_rate_limit(error) else candidate.route.deployment
        if self._cooldowns.failed(name, outcome, after):
            self._observe("cooldown", candidate, name)
            await self._cooldowns.publish(name)

    async def _answered(self, candidate: Candidate, started: float) -> None:
        self.attempts.append(
            Attempt(
                candidate.route.deployment,
                candidate.key_name,
                "answered",
                time.monotonic() - started,
            )
        )
        await self._cooldowns.succeeded(candidate.route.deployment)
        await self._cooldowns.succeeded(candidate.key_name)
        self._observe("answered", candidate, "")
        if self._affinity is not None:
            await self._affinity.answered(candidate, self.attempts)

    def route_item(self) -> Item:
        """Which deployment answered and every attempt, for the stored turn."""
        answered = next((a for a in self.attempts if a.outcome == "answered"), None)
        route: Item = {
            "answered_by": answered.deployment if answered else None,
            "key": answered.key if answered else None,
            "attempts": [attempt.as_item() for attempt in self.attempts],
        }
        affinity = self._affinity.item() if self._affinity is not None else None
        if affinity is not None:
            route["affinity"] = affinity
        return route

    async def _relay(
        self, head: list[Event | TurnResult], events: UpstreamStream
    ) -> UpstreamStream:
        for event in head:
            if isinstance(event, TurnResult):
                event.route = self.route_item()
            yield event
        async for event in events:
            if isinstance(event, TurnResult):
                event.route = self.route_item()
            yield event


def _after(candidates: list[Candidate], current: Candidate, error: Exception) -> Candidate:
    """The candidate to try after ``current`` failed: after a 429, another key of the same
    deployment first; after anything else, another deployment; else ``current`` again."""
    position = candidates.index(current)
    rest = candidates[position + 1 :] + candidates[: position + 1]  # ``current`` last
    same = current.route.deployment
    if _is_rate_limit(error):
        keys = [c for c in rest if c.route.deployment == same and c is not current]
        if keys:
            return keys[0]
    others = [c for c in rest if c.route.deployment != same]
    return others[0] if others else rest[0]


async def _head(events: UpstreamStream) -> list[Event | TurnResult]:
    """The events before the first output delta (or the end); raise
    :class:`FailedBeforeOutput` when the stream failed before any output."""
    head: list[Event | TurnResult] = []
    async for event in events:
        head.append(event)
        if isinstance(event, TurnResult):
            code = (event.error or {}).get("code")
            if event.status == "failed" and not event.output and code != "context_length_exceeded":
                raise FailedBeforeOutput(event)
            return head
        if event["type"].endswith(".delta"):
            return head
    return head


async def _replayed(result: TurnResult, route: Item) -> UpstreamStream:
    result.route = route
    yield result


def _is_rate_limit(error: Exception) -> bool:
    return isinstance(error, UpstreamRejected) and error.status == 429


def _outcome(error: Exception) -> str:
    if isinstance(error, UpstreamRejected):
        return f"http_{error.status}"
    if isinstance(error, FailedBeforeOutput):
        return "failed_before_output"
    return type(error).__name__.removeprefix("Upstream").lower()
