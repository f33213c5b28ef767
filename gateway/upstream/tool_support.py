"""Who serves each tool a request hands the model, decided per provider in one place.

A tool is passed to the upstream natively (a Responses provider runs it: every type by
default, ``native_tools`` to name them), run by the gateway (``mcp`` today: each kind the
gateway runs is one entry of :data:`GATEWAY_RUN`), or translated into a function the
client executes (``function``, ``custom``, ``namespace`` and the built-in client tools of
:mod:`.builtin_tools`). A tool none of these serves is a 400 naming it, before anything is
stored or sent: never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from ..config_sections import ProviderSettings
from ..errors import APIError, invalid_request
from .builtin_tools import for_tool
from .results import Item

Serving = Literal["upstream", "gateway", "client"]

# Tools every wire offers the model as functions (a Responses upstream takes them as they are).
CLIENT_FUNCTIONS = frozenset({"function", "custom", "namespace"})
# The kinds the gateway runs itself, and for which providers.
GATEWAY_RUN: Mapping[str, Callable[[ProviderSettings], bool]] = MappingProxyType(
    {"mcp": lambda provider: provider.mcp_runner() == "gateway"}
)


def serving(provider: ProviderSettings, tool: Item) -> Serving | None:
    """Who serves ``tool`` for ``provider``'s model; ``None``: no one."""
    kind = tool.get("type")
    if kind in CLIENT_FUNCTIONS:
        return "client"
    runs_here = GATEWAY_RUN.get(str(kind))
    if runs_here is not None and runs_here(provider):
        return "gateway"
    if provider.wire_api == "responses":
        return "upstream" if provider.runs_natively(str(kind)) else None
    builtin = for_tool(kind)
    if builtin is not None and builtin.refusal(tool) is None:
        return "client"
    return None


def unsupported_tool(tool: Item, index: int, model: str) -> APIError:
    """OpenAI's refusal of a tool a model does not support, naming ``tools[index]``."""
    kind = tool.get("type")
    builtin = for_tool(kind)
    why = builtin.refusal(tool) if builtin is not None else None
    if why is not None:
        return invalid_request(
            f"Tool '{kind}' is not supported with {model}: {why} is not run for this model.",
            param=f"tools[{index}].environment.type",
        )
    return invalid_request(
        f"Tool '{kind}' is not supported with {model}.", param=f"tools[{index}].type"
    )


def check_tools(tools: Any, model: str, providers: Iterable[ProviderSettings]) -> None:
    """A 400 for the first tool of ``tools`` that one of ``providers`` (every provider the
    turn may reach) would not serve."""
    if not isinstance(tools, list):
        return
    for provider in providers:
        for index, tool in enumerate(tools):
            if isinstance(tool, dict) and serving(provider, tool) is None:
                raise unsupported_tool(tool, index, model)
