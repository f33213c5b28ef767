"""The gateway running tools for a model that cannot: an upstream around the real one.

:class:`HostedUpstream` lets each kind set the turn up (MCP connects to its servers, lists
their tools and runs the calls the client approved), then offers the model each kind's
functions in place of the request's tools of that kind, runs each call it makes and calls
it again with the results, until it answers, a call waits for the client (an approval),
the client has function calls of its own to run, ``max_tool_calls`` (every call the
gateway runs, of any kind) is reached (the functions are no longer offered) or the turn's
time for tools has passed. The turn's output holds every model call's items, the kinds'
items in place of their function calls; its usage is their sum. Any mix of kinds runs in
one loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace

from ...tracing import NO_TRACER, Tracer
from ..base import Replay, Upstream, UpstreamStream, Wrapping
from ..errors import UpstreamError
from ..results import Event, Item, TurnResult, failed_result, summed_usage
from .kind import Kind
from .step import Step

MAX_MODEL_CALLS = 100  # past this many in one turn, the functions are no longer offered


class HostedUpstream(Wrapping):
    """``inner`` with the request's tools of ``kinds`` run by the gateway (see the module)."""

    def __init__(
        self,
        inner: Upstream,
        kinds: list[Kind],
        max_turn_seconds: float,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        super().__init__(inner)
        self._tracer = tracer
        self._kinds = kinds
        self._seconds = max_turn_seconds

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        run = Run(self._inner, self._kinds, request, stream, self._seconds, self._tracer)
        async with AsyncExitStack() as stack:
            await run.open(stack)
            first = None
            if run.failure is None:
                first = await stack.enter_async_context(
                    self._inner.open(run.request(run.may_call()), stream=stream)
                )
            if stream:
                yield run.relay(first)
                return
            result: TurnResult | None = None
            async for event in run.relay(first):
                if isinstance(event, TurnResult):
                    result = event
            yield Replay([], result or failed_result("The response broke off."))


class Run:
    """One turn's state: the output so far, what the model reads next, the calls planned."""

    def __init__(
        self,
        inner: Upstream,
        kinds: list[Kind],
        request: Item,
        stream: bool,
        seconds: float,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self.tracer = tracer  # each call the gateway runs is a span of its own
        self._inner = inner
        self.kinds = kinds
        self._request = request
        self.stream = stream
        self.output: list[Item] = []
        model_input = list(request["input"])
        for kind in kinds:
            model_input = kind.read_back(model_input)
        self.model_input = model_input
        self.planned = 0
        limit = request.get("max_tool_calls")
        self._limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        self.seconds = seconds
        self._deadline = asyncio.get_running_loop().time() + seconds
        self._events: list[Event] = []
        self.failure: TurnResult | None = None
        self._usage: Item | None = None
        self._cost: float | None = None
        self._first: TurnResult | None = None

    def emit(self, *events: Event) -> None:
        if self.stream:
            self._events += events

    def remaining(self) -> float:
        return self._deadline - asyncio.get_running_loop().time()

    def may_call(self) -> bool:
        return self._limit is None or self.planned < self._limit

    async def open(self, stack: AsyncExitStack) -> None:
        """Let each kind set the turn up; the first failure ends it."""
        for kind in self.kinds:
            message = await kind.open(self, stack)
            if message is not None:
                self.failure = failed_result(message, self.output)
                return

    def request(self, offer: bool) -> Item:
        """The request the model gets: the client's tools and, when ``offer``, the kinds'
        functions; the input as it reads it."""
        types = {kind_type for kind in self.kinds for kind_type in kind.tool_types}
        tools = [t for t in self._request.get("tools") or [] if t.get("type") not in types]
        if offer:
            tools += [function for kind in self.kinds for function in kind.functions()]
        request = {k: v for k, v in self._request.items() if k != "max_tool_calls"}
        request["input"] = list(self.model_input)
        request["tools"] = tools
        choice = request.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") in types:
            named = next((k.choice(choice) for k in self.kinds if k.choice(choice)), None)
            request["tool_choice"] = named if offer and named else "auto"
        elif choice == "required" and not offer and not tools:
            request["tool_choice"] = "auto"
        if not tools:
            request.pop("tools")
            request.pop("tool_choice", None)
        return request

    async def relay(self, first: UpstreamStream | None) -> UpstreamStream:
        """The turn's events and its result."""
        for event in self._flush():
            yield event
        if self.failure is not None:
            yield self.failure
            return
        stream, calls, last = first, 0, None
        while True:
            offer = calls < MAX_MODEL_CALLS and self.may_call()
            async with AsyncExitStack() as iteration:
                if stream is None:
                    if self.remaining() <= 0:
                        message = f"The tools of this response took over {self.seconds:g} seconds."
                        yield self._ended(failed_result(message))
                        return
                    try:
                        stream = await iteration.enter_async_context(
                            self._inner.open(self.request(offer), stream=self.stream)
                        )
                    except UpstreamError as error:
                        yield self._ended(failed_result(error.message))
                        return
                step, result = Step(self, offer), None
                async for inner in stream:
                    if isinstance(inner, TurnResult):
                        result = inner
                    elif self.stream:
                        for relayed in step.relay(inner):
                            yield relayed
                last = result or failed_result("The answer ended without a result.")
                self._account(last)
                again = False
                if last.status == "failed":
                    step.abandon(last)
                else:
                    again = await step.finish(last)
                for event in self._flush():
                    yield event
            if not again:
                yield self._ended(last)
                return
            stream, calls = None, calls + 1

    def _account(self, result: TurnResult) -> None:
        self._usage = summed_usage(self._usage, result.usage)
        if result.cost_usd is not None:
            self._cost = (self._cost or 0.0) + result.cost_usd
        if self._first is None:
            self._first = result

    def _ended(self, last: TurnResult) -> TurnResult:
        """The turn's result: the last model call's, with every call's output and usage
        (and the first call's own times)."""
        first = vars(self._first) if self._first is not None else {}
        early = {k: v for k, v in first.items() if k.startswith("first_") and v is not None}
        return replace(last, output=self.output, usage=self._usage, cost_usd=self._cost, **early)

    def _flush(self) -> list[Event]:
        events, self._events = self._events, []
        return events
