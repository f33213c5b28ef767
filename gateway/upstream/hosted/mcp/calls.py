"""One ``mcp_call`` run on its server (or failed unrun), its item completed, its events sent."""

from __future__ import annotations

import asyncio
import json

from ...results import Item
from ..events import done
from ..kind import Emit
from .connection import Connection, McpFailure
from .history import error_text
from .items import progress


def refusal(message: str) -> Item:
    """The error of a call the gateway did not run."""
    return {"type": "mcp_protocol_error", "code": -32600, "message": message}


def fail(at: int, item: Item, failure: McpFailure, emit: Emit) -> str:
    """Complete the item as failed; what the model is told."""
    item["error"], item["status"] = failure.error, "failed"
    emit(progress("response.mcp_call.failed", at, item), done(at, item))
    return error_text(item["error"])


async def call_output(
    connection: Connection | None,
    broken: McpFailure | None,
    at: int,
    item: Item,
    seconds: float,
    turn_seconds: float,
    emit: Emit,
) -> str:
    """Run the item's call within ``seconds`` (none left: the turn's ``turn_seconds`` are
    over) and complete it; what the model is told. ``broken``: why a server listed before
    could not be reached this turn."""
    try:
        if connection is None:
            raise broken or McpFailure("The MCP server is not connected.", refusal("Not run."))
        if seconds <= 0:
            message = f"Not run: the tools of this response took over {turn_seconds:g} seconds."
            raise McpFailure(message, refusal(message))
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
        return fail(at, item, failure, emit)
    except asyncio.CancelledError:
        item["status"] = "incomplete"
        raise
    item["output"], item["status"] = output, "completed"
    emit(progress("response.mcp_call.completed", at, item), done(at, item))
    return output
