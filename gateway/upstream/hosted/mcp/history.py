"""MCP items in a turn's input, as a model without MCP reads them, and the approvals they hold.

The model sees an MCP server's tools as functions of reserved names (:class:`Names`), so an
earlier ``mcp_call`` becomes a ``function_call`` and its ``function_call_output``; an
``mcp_approval_request`` answered "no" becomes the same pair with the denial as output;
``mcp_list_tools`` items leave the input (their tools are kept: a chain that listed a
server once does not list it again). An ``mcp_approval_response`` must answer a request
of the input that no earlier response or call answered; one that approves a call not yet
run is returned, for the turn to run it first, and its request stays in the input where
the call and its output go.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from ....errors import invalid_request
from ...results import Item

PREFIX = "mcp__"
SEPARATOR = "__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


class Names:
    """The function names an MCP server's tools take: ``mcp__LABEL__TOOL``, made safe, kept
    under 64 characters and away from the client's own tool names."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = set(taken)
        self._names: dict[tuple[str, str], str] = {}
        self._tools: dict[str, tuple[str, str]] = {}

    def name(self, label: str, tool: str) -> str:
        key = (label, tool)
        if key in self._names:
            return self._names[key]
        name = _UNSAFE.sub("_", f"{PREFIX}{label}{SEPARATOR}{tool}")
        if len(name) > _MAX_NAME:
            digest = hashlib.sha256(f"{label}\0{tool}".encode()).hexdigest()[:12]
            name = f"{name[: _MAX_NAME - 13]}_{digest}"
        base, number = name, 2
        while name in self._taken:
            suffix = f"_{number}"
            name, number = base[: _MAX_NAME - len(suffix)] + suffix, number + 1
        self._taken.add(name)
        self._names[key] = name
        self._tools[name] = key
        return name

    def tool(self, name: str) -> tuple[str, str] | None:
        """The (server label, tool name) a function name stands for, if it is one of ours."""
        return self._tools.get(name)


@dataclass
class History:
    """The input as the model reads it, the tools listed before by label, approvals to run."""

    items: list[Item]
    listed: dict[str, list[Item]] = field(default_factory=dict)
    approved: list[Item] = field(default_factory=list)  # requests, still in ``items``


def call_pair(call_id: str, name: str, arguments: str, output: str) -> list[Item]:
    """A function call and its output, as the model is told of an MCP call."""
    return [
        {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments},
        {"type": "function_call_output", "call_id": call_id, "output": output},
    ]


def error_text(error: object) -> str:
    """An ``mcp_call`` error (a string or an error object) as the model reads it."""
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str):
            return f"Error: {message}"
        return f"Error: {json.dumps(error.get('content', error))}"
    return f"Error: {error}"


def denied_text(reason: object) -> str:
    text = "The user denied this tool call."
    return f"{text} Reason: {reason}" if isinstance(reason, str) and reason else text


def _check_responses(items: list[Item], own_start: int, labels: set[str]) -> dict[str, Item]:
    """The answer to each approval request, by its id; a 400 for one answering nothing, or
    what was answered already, or a server the request does not name."""
    requests: dict[str, Item] = {}
    answered: dict[str, Item] = {}
    ran: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind == "mcp_approval_request" and isinstance(item.get("id"), str):
            requests[item["id"]] = item
        elif kind == "mcp_call" and isinstance(item.get("approval_request_id"), str):
            ran.add(item["approval_request_id"])
        elif kind == "mcp_approval_response":
            answer = item.get("approval_request_id")
            param = f"input[{max(index - own_start, 0)}]"
            if index < own_start:  # checked by the turn that brought it
                if isinstance(answer, str):
                    answered.setdefault(answer, item)
                continue
            if not isinstance(answer, str) or answer not in requests:
                raise invalid_request(
                    f"The mcp_approval_response in '{param}' answers no approval request of "
                    f"this conversation ({answer!r}).",
                    param=f"{param}.approval_request_id",
                )
            if answer in answered or answer in ran:
                raise invalid_request(
                    f"The approval request {answer!r} in '{param}' was answered already.",
                    param=f"{param}.approval_request_id",
                )
            if not isinstance(item.get("approve"), bool):
                raise invalid_request(
                    f"Invalid '{param}.approve': expected a boolean.", param=f"{param}.approve"
                )
            label = requests[answer].get("server_label")
            if item["approve"] and label not in labels:
                raise invalid_request(
                    f"The approval in '{param}' is for the MCP server {label!r}, which is not "
                    "among this request's tools.",
                    param=param,
                )
            answered[answer] = item
    return answered


def model_history(items: list[Item], own_count: int, names: Names, labels: set[str]) -> History:
    """The input as the model reads it (see the module's docstring)."""
    own_start = max(len(items) - own_count, 0)
    answers = _check_responses(items, own_start, labels)
    ran = {
        item.get("approval_request_id")
        for item in items
        if item.get("type") == "mcp_call" and item.get("approval_request_id")
    }
    history = History([])
    for item in items:
        kind = item.get("type")
        if kind == "mcp_list_tools":
            if not item.get("error") and isinstance(item.get("tools"), list):
                history.listed[str(item.get("server_label"))] = item["tools"]
        elif kind == "mcp_call":
            name = names.name(str(item.get("server_label")), str(item.get("name")))
            error = item.get("error")
            output = error_text(error) if error else str(item.get("output") or "")
            call_id = str(item.get("id"))
            history.items += call_pair(call_id, name, str(item.get("arguments") or "{}"), output)
        elif kind == "mcp_approval_request":
            answer = answers.get(str(item.get("id")))
            if answer is None or item.get("id") in ran:
                continue
            if answer.get("approve"):
                history.approved.append(item)
                history.items.append(item)
                continue
            name = names.name(str(item.get("server_label")), str(item.get("name")))
            arguments = str(item.get("arguments") or "{}")
            denied = denied_text(answer.get("reason"))
            history.items += call_pair(str(item.get("id")), name, arguments, denied)
        elif kind != "mcp_approval_response":
            history.items.append(item)
    return history
