"""The gateway running ``mcp`` tools for a model that cannot: an upstream around the real one.

:class:`McpUpstream` connects to each server of the request, lists its tools (unless the
input holds a listing already: an ``mcp_list_tools`` item), runs the calls the client
approved, then calls the model with the tools as functions, runs each call it makes and
calls it again with the results, until it answers, a call waits for approval, the client
has function calls of its own to run, ``max_tool_calls`` is reached or
``mcp.max_turn_seconds`` has passed. The turn's output holds every model call's items,
MCP items in place of the function calls; its usage is their sum.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace

from ...config_sections import McpSettings
from ...errors import APIError, invalid_request
from ..addresses import Resolver
from ..base import Replay, Upstream, UpstreamStream
from ..errors import UpstreamError
from ..results import Event, Item, TurnResult, failed_result
from ..tools import function_tools
from .choice import choice_problem, model_choice
from .connection import Connection, McpFailure, connect
from .history import Approval, Names, call_pair, error_text, model_history
from .items import added, call_item, done, list_tools_item, progress, summed_usage
from .servers import Server, check_address, servers
from .step import Step, run_call

MAX_MODEL_CALLS = 100  # past this many in one turn, the tools are no longer offered


class McpUpstream:
    """``inner`` with the request's ``mcp`` tools run by the gateway (see the module)."""

    def __init__(
        self, inner: Upstream, settings: McpSettings, own_count: int, resolver: Resolver
    ) -> None:
        self._inner = inner
        self.capabilities = inner.capabilities
        self._settings = settings
        self._resolver = resolver  # answers the server names; what it gives is checked
        self._own_count = own_count  # the client's own input items, last in the input

    async def check(self, request: Item) -> None:
        """The 400s a request's MCP tools and approvals earn, before anything is stored:
        a bad tool, a server off the list or at a private address, an approval that
        answers nothing (they are checked again as the turn runs)."""
        found = servers(request.get("tools") or [], self._settings)
        names = Names({tool.name for tool in function_tools(request.get("tools") or [])})
        model_history(request["input"], self._own_count, names, {s.label for s in found})
        for server in found:
            if not server.listed:
                await check_address(server.url, f"tools[{server.index}].server_url", self._resolver)

    @asynccontextmanager
    async def open(self, request: Item, *, stream: bool) -> AsyncIterator[UpstreamStream]:
        tools = request.get("tools") or []
        found = servers(tools, self._settings)
        names = Names({tool.name for tool in function_tools(tools)})
        labels = {server.label for server in found}
        history = model_history(request["input"], self._own_count, names, labels)
        run = Run(self._inner, self._settings, self._resolver, request, found, names, stream)
        run.model_input = history.items
        async with AsyncExitStack() as stack:
            await run.prologue(stack, history.listed)
            run.check_choice()
            await run.run_approved(history.approved)
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
    """One turn's MCP state: the servers, the output so far, what the model reads next."""

    def __init__(
        self,
        inner: Upstream,
        settings: McpSettings,
        resolver: Resolver,
        request: Item,
        found: list[Server],
        names: Names,
        stream: bool,
    ) -> None:
        self._inner = inner
        self.settings = settings
        self._resolver = resolver
        self._request = request
        self.servers = {server.label: server for server in found}
        self.names = names
        self.stream = stream
        self.output: list[Item] = []
        self.model_input: list[Item] = []
        self.connections: dict[str, Connection] = {}
        self.broken: dict[str, McpFailure] = {}
        self.tools: dict[str, list[Item]] = {}
        self.planned = 0
        limit = request.get("max_tool_calls")
        self._limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        self._deadline = asyncio.get_running_loop().time() + settings.max_turn_seconds
        self._events: list[Event] = []
        self.failure: TurnResult | None = None
        self._usage: Item | None = None
        self._cost: float | None = None
        self._first: TurnResult | None = None

    # -- what steps use -------------------------------------------------------------------

    def emit(self, *events: Event) -> None:
        if self.stream:
            self._events += events

    def remaining(self) -> float:
        return self._deadline - asyncio.get_running_loop().time()

    def may_call(self) -> bool:
        return self._limit is None or self.planned < self._limit

    def offers(self, label: str, tool: str) -> bool:
        return any(listed.get("name") == tool for listed in self._offered(label))

    def _offered(self, label: str) -> list[Item]:
        server = self.servers.get(label)
        if server is None:
            return []
        return [
            tool
            for tool in self.tools.get(label, [])
            if isinstance(tool, dict)
            and server.offers(str(tool.get("name")), tool.get("annotations"))
        ]

    def fail_call(self, at: int, item: Item, failure: McpFailure) -> None:
        item["error"], item["status"] = failure.error, "failed"
        self.emit(progress("response.mcp_call.failed", at, item), done(at, item))

    async def call(self, at: int, item: Item) -> None:
        await run_call(self, at, item)

    # -- before the model -----------------------------------------------------------------

    async def prologue(self, stack: AsyncExitStack, listed: dict[str, list[Item]]) -> None:
        """Connect to every server and list the tools of those not listed before. A server
        that cannot be listed fails the turn: a 424 unstreamed, a failed stream else."""
        for server in self.servers.values():
            item: Item | None = None
            if server.label not in listed:
                item = list_tools_item(server.label)
                self.output.append(item)
                at = len(self.output) - 1
                self.emit(
                    added(at, item), progress("response.mcp_list_tools.in_progress", at, item)
                )
            try:
                connection = await stack.enter_async_context(
                    connect(server, self.settings, self._resolver)
                )
                self.connections[server.label] = connection
                if item is None:
                    self.tools[server.label] = listed[server.label]
                    continue
                item["tools"] = self.tools[server.label] = await connection.list_tools()
            except McpFailure as failure:
                if item is None:
                    self.broken[server.label] = failure  # its calls fail, each saying why
                    self.tools[server.label] = listed[server.label]
                    continue
                self._list_failed(at, item, failure)
                return
            self.emit(progress("response.mcp_list_tools.completed", at, item), done(at, item))

    def check_choice(self) -> None:
        """A 400 naming ``tool_choice`` (a failed turn, streamed) for a tool its server,
        listed now, does not offer."""
        problem = choice_problem(self._request.get("tool_choice"), set(self.servers), self.offers)
        if problem is None or self.failure is not None:
            return
        if not self.stream:
            raise invalid_request(problem, param="tool_choice", code="invalid_value")
        self.failure = failed_result(problem, self.output)

    def _list_failed(self, at: int, item: Item, failure: McpFailure) -> None:
        message = (
            f"Error retrieving tool list from MCP server: '{item['server_label']}'. "
            f"Http status code: 424 (Failed Dependency). {failure.message}"
        )
        if not self.stream:
            raise APIError(
                424, message, type="external_connector_error", param="tools", code="http_error"
            )
        item["error"] = message
        self.emit(progress("response.mcp_list_tools.failed", at, item), done(at, item))
        self.failure = failed_result(message, self.output)

    async def run_approved(self, approved: list[Approval]) -> None:
        """Run the calls the client approved in this request, before the model goes on."""
        if self.failure is not None:
            return
        pairs: list[tuple[int, list[Item]]] = []
        for approval in approved:
            request = approval.request
            label, tool = str(request.get("server_label")), str(request.get("name"))
            item = call_item(label, tool, str(request.get("id")))
            item["arguments"] = str(request.get("arguments") or "{}")
            at = len(self.output)
            self.output.append(item)
            self.planned += 1
            self.emit(added(at, item), progress("response.mcp_call.in_progress", at, item))
            self.emit(
                progress("response.mcp_call_arguments.done", at, item, arguments=item["arguments"])
            )
            await self.call(at, item)
            output = item["output"] if item["error"] is None else error_text(item["error"])
            name = self.names.name(label, tool)
            pairs.append(
                (
                    approval.position,
                    call_pair(str(request.get("id")), name, item["arguments"], output),
                )
            )
        for position, pair in reversed(pairs):  # from the last: earlier positions stay put
            self.model_input[position:position] = pair

    # -- the model ------------------------------------------------------------------------

    def request(self, offer: bool) -> Item:
        """The request the model gets: the client's tools and, when ``offer``, the MCP tools
        as functions; the input as it reads it."""
        tools = [t for t in self._request.get("tools") or [] if t.get("type") != "mcp"]
        if offer:
            for label, server in self.servers.items():
                for tool in self._offered(label):
                    tools.append(self._function(server, tool))
        request = {k: v for k, v in self._request.items() if k != "max_tool_calls"}
        request["input"] = list(self.model_input)
        request["tools"] = tools
        if "tool_choice" in request:
            request["tool_choice"] = model_choice(
                request["tool_choice"], offer, self.offers, self.names
            )
        if not tools:
            request.pop("tools")
            request.pop("tool_choice", None)
        return request

    def _function(self, server: Server, tool: Item) -> Item:
        name = str(tool.get("name"))
        about = f"A tool of the MCP server '{server.label}'"
        about += f" ({server.description})." if server.description else "."
        description = str(tool.get("description") or "").strip()
        schema = tool.get("input_schema")
        return {
            "type": "function",
            "name": self.names.name(server.label, name),
            "description": f"{description}\n\n{about}" if description else about,
            "parameters": schema if isinstance(schema, dict) else {"type": "object"},
        }

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
                        limit = self.settings.max_turn_seconds
                        message = f"The MCP tools of this response took over {limit:g} seconds."
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
