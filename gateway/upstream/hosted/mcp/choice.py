"""A ``tool_choice`` of ``{"type": "mcp", "server_label", "name"}``: checked against the
server's tools once they are listed, and turned into the choice the model is sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .history import Names

Offers = Callable[[str, str], bool]  # whether the server ``label`` offers the tool ``name``


def _mcp(choice: Any) -> tuple[str, Any] | None:
    if isinstance(choice, dict) and choice.get("type") == "mcp":
        return str(choice.get("server_label")), choice.get("name")
    return None


def choice_problem(choice: Any, labels: set[str], offers: Offers) -> str | None:
    """Why ``choice`` cannot be served (a server that is not among the request's, a tool
    that server does not offer), or ``None``."""
    picked = _mcp(choice)
    if picked is None:
        return None
    label, name = picked
    if label not in labels:
        return (
            f"Tool choice 'mcp' names the server label {label!r}, which no 'mcp' tool in "
            "'tools' has."
        )
    if name is not None and not (isinstance(name, str) and offers(label, name)):
        return (
            f"Tool choice 'mcp' names the tool {name!r}, which the MCP server {label!r} "
            "does not offer."
        )
    return None


def model_choice(choice: Any, offer: bool, offers: Offers, names: Names) -> Any:
    """The ``tool_choice`` the model is sent: the named tool's function, ``required`` for
    a server named alone, ``auto`` once the tools are no longer offered; any other choice
    as it is."""
    picked = _mcp(choice)
    if picked is None:
        return choice
    label, name = picked
    if offer and isinstance(name, str) and offers(label, name):
        return {"type": "function", "name": names.name(label, name)}
    return "required" if offer else "auto"
