"""``mcp`` tools as a kind of tool the gateway runs (:class:`gateway.upstream.hosted.Kind`).

Setting a turn up, it connects to each server of the request, lists its tools (unless the
input holds a listing already: an ``mcp_list_tools`` item) and runs the calls the client
approved. A server that cannot be listed fails the turn: a 424 unstreamed, a failed stream
else. The model sees the tools as functions of reserved names (:class:`.history.Names`);
each call it makes becomes an ``mcp_call`` (run), an ``mcp_approval_request`` (the turn
ends for the client to decide) or, for a tool the model is not offered, an ``mcp_call``
that failed unrun.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from ....config_sections import McpSettings
from ....errors import APIError, invalid_request
from ...results import Event, Item
from ...translation.tools import function_tools
from ...transport.addresses import Resolver
from ..events import added, done
from ..kind import Call, Emit, Turn
from .calls import call_output, fail, refusal
from .choice import choice_problem, model_choice
from .connection import Connection, McpFailure, connect
from .history import History, Names, call_pair, model_history
from .items import approval_item, call_item, list_tools_item, progress
from .servers import Server, check_address, servers

MCP_TYPES = frozenset({"mcp"})


class Mcp:
    """The request's ``mcp`` tools, run on their servers (see the module)."""

    label = "MCP"
    tool_types = MCP_TYPES

    def __init__(
        self, settings: McpSettings, resolver: Resolver, request: Item, own_count: int
    ) -> None:
        tools = request.get("tools") or []
        self._settings = settings
        self.max_turn_seconds = settings.max_turn_seconds
        self._resolver = resolver  # answers the server names; what it gives is checked
        self._request = request
        self._own_count = own_count  # the client's own input items, last in the input
        self._servers = {server.label: server for server in servers(tools, settings)}
        self._names = Names({tool.name for tool in function_tools(tools)})
        self._history = History([])
        self._connections: dict[str, Connection] = {}
        self._broken: dict[str, McpFailure] = {}
        self._tools: dict[str, list[Item]] = {}
        self._refused: set[str] = set()  # the ids of calls of tools the model is not offered
        self._seconds = settings.max_turn_seconds

    async def check(self) -> None:
        """A bad approval, a server at a private address (checked again as the turn runs)."""
        model_history(self._request["input"], self._own_count, self._names, set(self._servers))
        for server in self._servers.values():
            if not server.listed:
                await check_address(server.url, f"tools[{server.index}].server_url", self._resolver)

    def read_back(self, items: list[Item]) -> list[Item]:
        self._history = model_history(items, self._own_count, self._names, set(self._servers))
        return self._history.items

    # -- setting the turn up ------------------------------------------------------------------

    async def open(self, turn: Turn, stack: AsyncExitStack) -> str | None:
        self._connections, self._broken, self._tools = {}, {}, {}
        self._seconds = turn.seconds
        listed = self._history.listed
        for server in self._servers.values():
            item: Item | None = None
            if server.label not in listed:
                item = list_tools_item(server.label)
                turn.output.append(item)
                at = len(turn.output) - 1
                turn.emit(
                    added(at, item), progress("response.mcp_list_tools.in_progress", at, item)
                )
            try:
                connection = await stack.enter_async_context(
                    connect(server, self._settings, self._resolver)
                )
                self._connections[server.label] = connection
                if item is None:
                    self._tools[server.label] = listed[server.label]
                    continue
                item["tools"] = self._tools[server.label] = await connection.list_tools()
            except McpFailure as failure:
                if item is None:
                    self._broken[server.label] = failure  # its calls fail, each saying why
                    self._tools[server.label] = listed[server.label]
                    continue
                return self._list_failed(turn, at, item, failure)
            turn.emit(progress("response.mcp_list_tools.completed", at, item), done(at, item))
        problem = choice_problem(self._request.get("tool_choice"), set(self._servers), self.offers)
        if problem is not None:
            if not turn.stream:
                raise invalid_request(problem, param="tool_choice", code="invalid_value")
            return problem
        await self._run_approved(turn)
        return None

    @staticmethod
    def _list_failed(turn: Turn, at: int, item: Item, failure: McpFailure) -> str:
        message = (
            f"Error retrieving tool list from MCP server: '{item['server_label']}'. "
            f"Http status code: 424 (Failed Dependency). {failure.message}"
        )
        if not turn.stream:
            raise APIError(
                424, message, type="external_connector_error", param="tools", code="http_error"
            )
        item["error"] = message
        turn.emit(progress("response.mcp_list_tools.failed", at, item), done(at, item))
        return message

    async def _run_approved(self, turn: Turn) -> None:
        """Run the calls the client approved in this request, before the model goes on:
        each in the place of its request in the input."""
        for request in self._history.approved:
            label, tool = str(request.get("server_label")), str(request.get("name"))
            item = call_item(label, tool, str(request.get("id")))
            item["arguments"] = str(request.get("arguments") or "{}")
            at = len(turn.output)
            turn.output.append(item)
            turn.planned += 1
            turn.emit(added(at, item), progress("response.mcp_call.in_progress", at, item))
            turn.emit(
                progress("response.mcp_call_arguments.done", at, item, arguments=item["arguments"])
            )
            output = await self._call(at, item, turn.remaining(), turn.emit)
            pair = call_pair(
                str(request.get("id")), self._names.name(label, tool), item["arguments"], output
            )
            where = next(n for n, held in enumerate(turn.model_input) if held is request)
            turn.model_input[where : where + 1] = pair

    # -- what the model is offered ------------------------------------------------------------

    def offers(self, label: str, tool: str) -> bool:
        return any(listed.get("name") == tool for listed in self._offered(label))

    def _offered(self, label: str) -> list[Item]:
        server = self._servers.get(label)
        if server is None:
            return []
        return [
            tool
            for tool in self._tools.get(label, [])
            if isinstance(tool, dict)
            and server.offers(str(tool.get("name")), tool.get("annotations"))
        ]

    def functions(self) -> list[Item]:
        return [
            self._function(server, tool)
            for label, server in self._servers.items()
            for tool in self._offered(label)
        ]

    def _function(self, server: Server, tool: Item) -> Item:
        name = str(tool.get("name"))
        about = f"A tool of the MCP server '{server.label}'"
        about += f" ({server.description})." if server.description else "."
        description = str(tool.get("description") or "").strip()
        schema = tool.get("input_schema")
        return {
            "type": "function",
            "name": self._names.name(server.label, name),
            "description": f"{description}\n\n{about}" if description else about,
            "parameters": schema if isinstance(schema, dict) else {"type": "object"},
        }

    def owns(self, name: str) -> bool:
        found = self._names.tool(name)
        return found is not None and found[0] in self._servers

    def choice(self, tool_choice: object) -> object | None:
        if not isinstance(tool_choice, dict) or tool_choice.get("type") not in MCP_TYPES:
            return None
        picked: object = model_choice(tool_choice, True, self.offers, self._names)
        return picked

    # -- the model's calls --------------------------------------------------------------------

    def start(self, name: str) -> Call:
        label, tool = self._names.tool(name) or ("", name)
        if not self.offers(label, tool):
            item = call_item(label, tool)
            self._refused.add(item["id"])
            return Call(item, counted=False)
        if self._servers[label].needs_approval(tool):
            return Call(approval_item(label, tool, ""), counted=False, waits=True)
        return Call(call_item(label, tool))

    def _calling(self, item: Item) -> bool:
        return item["type"] == "mcp_call" and item["id"] not in self._refused

    def started(self, at: int, item: Item) -> list[Event]:
        if item["type"] == "mcp_approval_request":
            return []
        return [progress("response.mcp_call.in_progress", at, item)]

    def relay(self, at: int, item: Item, event: Event) -> list[Event]:
        kind = event.get("type")
        if kind == "response.function_call_arguments.delta" and self._calling(item):
            return [progress("response.mcp_call_arguments.delta", at, item, delta=event["delta"])]
        if kind == "response.function_call_arguments.done":
            item["arguments"] = event.get("arguments", "")
            if self._calling(item):
                arguments = item["arguments"]
                return [progress("response.mcp_call_arguments.done", at, item, arguments=arguments)]
        if kind == "response.output_item.done" and item["type"] == "mcp_approval_request":
            item["arguments"] = (event.get("item") or {}).get("arguments", item["arguments"])
            return [done(at, item)]
        return []

    def settled(self, at: int, item: Item, arguments: str) -> list[Event]:
        item["arguments"] = arguments or item["arguments"]
        if item["type"] == "mcp_approval_request":
            return [done(at, item)]
        if self._calling(item):
            arguments = item["arguments"]
            return [progress("response.mcp_call_arguments.done", at, item, arguments=arguments)]
        return []

    async def run(self, at: int, item: Item, arguments: str, seconds: float, emit: Emit) -> str:
        if item["id"] in self._refused:
            message = "Not run: this tool is not offered to the model."
            return fail(at, item, McpFailure(message, refusal(message)), emit)
        return await self._call(at, item, seconds, emit)

    async def _call(self, at: int, item: Item, seconds: float, emit: Emit) -> str:
        label, limit = item["server_label"], min(self._settings.call_timeout_seconds, seconds)
        connection, broken = self._connections.get(label), self._broken.get(label)
        return await call_output(connection, broken, at, item, limit, self._seconds, emit)

    def annotations(self, text: str) -> list[Item]:
        return []
