"""One model call of an MCP turn: its events relayed, its MCP tool calls run.

The inner upstream answers with plain function calls to the reserved names; each becomes
an ``mcp_call`` (run here), an ``mcp_approval_request`` (the turn ends for the client to
decide) or, past ``max_tool_calls``, an ``mcp_call`` that failed unrun, in the place the
function call had. Every other item and event passes through, its ``output_index``
shifted past the items earlier calls of the turn produced.
"""

from __future__ import annotations

import asyncio
import json
from typing import Protocol

from ...config_sections import McpSettings
from ..builtin_tools import CALL_TYPES
from ..results import Event, Item, TurnResult
from .connection import Connection, McpFailure
from .history import Names, call_pair, error_text
from .items import added, approval_item, call_item, done, progress
from .servers import Server


class Run(Protocol):
    """What a step reads and changes of its turn (:class:`gateway.upstream.mcp.run.Run`)."""

    settings: McpSettings
    servers: dict[str, Server]
    names: Names
    stream: bool
    output: list[Item]
    model_input: list[Item]
    connections: dict[str, Connection]
    broken: dict[str, McpFailure]
    planned: int

    def emit(self, *events: Event) -> None: ...

    def remaining(self) -> float: ...

    def may_call(self) -> bool: ...

    def offers(self, label: str, tool: str) -> bool: ...

    def fail_call(self, at: int, item: Item, failure: McpFailure) -> None: ...

    async def call(self, at: int, item: Item) -> None: ...


# A call past ``max_tool_calls`` (or once the tools are no longer offered) is IGNORED, as
# OpenAI has it: not run, not in the output, not read back to the model.
CALL, APPROVAL, REFUSED, IGNORED = "call", "approval", "refused", "ignored"
_CLIENT_CALLS = frozenset({"function_call", "custom_tool_call", *CALL_TYPES})


class Step:
    """The state of one model call: which of its items are MCP items, and what they are."""

    def __init__(self, run: Run, offered: bool) -> None:
        self._run = run
        self._offset = len(run.output)
        self._offered = offered
        self._decided: dict[int, tuple[str, Item]] = {}
        self._announced: set[int] = set()

    def _decide(self, index: int, inner: Item) -> tuple[str, Item] | None:
        if index in self._decided:
            return self._decided[index]
        if inner.get("type") != "function_call":
            return None
        found = self._run.names.tool(str(inner.get("name") or ""))
        if found is None or found[0] not in self._run.servers:
            return None
        label, tool = found
        server = self._run.servers[label]
        arguments = str(inner.get("arguments") or "")
        decision: tuple[str, Item]
        if not self._offered or not self._run.may_call():
            decision = (IGNORED, call_item(label, tool))
        elif not self._run.offers(label, tool):
            decision = (REFUSED, call_item(label, tool))
        elif server.needs_approval(tool):
            decision = (APPROVAL, approval_item(label, tool, arguments))
        else:
            self._run.planned += 1
            decision = (CALL, call_item(label, tool))
        self._decided[index] = decision
        return decision

    # -- streamed events ------------------------------------------------------------------

    def relay(self, event: Event) -> list[Event]:
        """The events to send for one of the inner stream's."""
        index = event.get("output_index")
        if not isinstance(index, int):
            return [event]
        kind = event.get("type")
        decision = self._decided.get(index)
        if kind == "response.output_item.added":
            decision = self._decide(index, event.get("item") or {})
        # Items come in order: those ignored before this one are known, and left out.
        at = (
            self._offset
            + index
            - sum(1 for j, (w, _) in self._decided.items() if j < index and w == IGNORED)
        )
        if decision is None:
            return [{**event, "output_index": at}]
        what, item = decision
        if what == IGNORED:
            return []
        if kind == "response.output_item.added":
            self._announced.add(index)
            return self._announce(at, *decision)
        if kind == "response.function_call_arguments.delta" and what == CALL:
            return [progress("response.mcp_call_arguments.delta", at, item, delta=event["delta"])]
        if kind == "response.function_call_arguments.done":
            item["arguments"] = event.get("arguments", "")
            if what == CALL:
                arguments = item["arguments"]
                return [progress("response.mcp_call_arguments.done", at, item, arguments=arguments)]
        if kind == "response.output_item.done" and what == APPROVAL:
            item["arguments"] = (event.get("item") or {}).get("arguments", item["arguments"])
            return [done(at, item)]
        return []

    @staticmethod
    def _announce(at: int, what: str, item: Item) -> list[Event]:
        events = [added(at, item)]
        if what != APPROVAL:
            events.append(progress("response.mcp_call.in_progress", at, item))
        return events

    # -- the end of the model call --------------------------------------------------------

    def abandon(self, result: TurnResult) -> None:
        """Add a failed call's items to the turn, its MCP calls unrun (``incomplete``)."""
        for index, inner in enumerate(result.output):
            decision = self._decided.get(index)
            if decision is None:
                self._run.output.append(inner)
                continue
            what, item = decision
            if what == IGNORED:
                continue
            item["arguments"] = str(inner.get("arguments") or item["arguments"])
            if what != APPROVAL:
                item["status"] = "incomplete"
            self._run.output.append(item)

    async def finish(self, result: TurnResult) -> bool:
        """Add the call's items to the turn, run its MCP calls; whether to call the model
        again (calls ran, none waits for approval, no client call waits for its output)."""
        run = self._run
        again = client_calls = waiting = False
        for index, inner in enumerate(result.output):
            decision = self._decide(index, inner)
            if decision is None:
                run.output.append(inner)
                run.model_input.append(inner)
                client_calls = client_calls or inner.get("type") in _CLIENT_CALLS
                continue
            what, item = decision
            if what == IGNORED:
                continue
            at = len(run.output)
            run.output.append(item)
            item["arguments"] = str(inner.get("arguments") or "")
            if run.stream and index not in self._announced:
                run.emit(*self._announce(at, what, item))
                if what == CALL:
                    arguments = item["arguments"]
                    run.emit(
                        progress("response.mcp_call_arguments.done", at, item, arguments=arguments)
                    )
            if what == APPROVAL:
                waiting = True
                if run.stream and index not in self._announced:
                    run.emit(done(at, item))
                continue
            if what == REFUSED:
                message = "Not run: this tool is not offered to the model."
                run.fail_call(at, item, McpFailure(message, _refusal(message)))
            else:
                await run.call(at, item)
                again = True
            call_id = str(inner.get("call_id") or item["id"])
            output = item["output"] if item["error"] is None else error_text(item["error"])
            run.model_input += call_pair(call_id, str(inner.get("name")), item["arguments"], output)
            again = again or self._offered
        return again and not waiting and not client_calls and result.status == "completed"


def _refusal(message: str) -> Item:
    return {"type": "mcp_protocol_error", "code": -32600, "message": message}


async def run_call(run: Run, at: int, item: Item) -> None:
    """Run one ``mcp_call`` item's call and complete it (its events when streamed)."""
    connection = run.connections.get(item["server_label"])
    seconds = min(run.settings.call_timeout_seconds, run.remaining())
    try:
        if connection is None:
            raise run.broken[item["server_label"]]
        if seconds <= 0:
            limit = run.settings.max_turn_seconds
            message = f"Not run: the MCP tools of this response took over {limit:g} seconds."
            raise McpFailure(message, _refusal(message))
        try:
            arguments = json.loads(item["arguments"] or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            message = "The model's arguments are not a JSON object."
            raise McpFailure(
                message, {"type": "mcp_protocol_error", "code": -32602, "message": message}
            )
        output = await connection.call(item["name"], arguments, seconds)
    except McpFailure as failure:
        run.fail_call(at, item, failure)
        return
    except asyncio.CancelledError:
        item["status"] = "incomplete"
        raise
    item["output"], item["status"] = output, "completed"
    run.emit(progress("response.mcp_call.completed", at, item), done(at, item))
