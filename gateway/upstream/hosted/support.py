"""Who serves each tool a request hands the model, decided per provider in one place.

A tool is passed to the upstream natively (a Responses provider runs it: every type by
default, ``native_tools`` to name them), run by the gateway (``mcp``, and ``web_search``
when ``web_search.backends`` are configured, ``file_search`` when
``file_search.embeddings_model`` is: each kind the gateway runs is one entry of
:data:`GATEWAY_RUN`), or translated into a function the
client executes (``function``, ``custom``, ``namespace`` and the built-in client tools of
:mod:`.builtin_tools`). A tool none of these serves is a 400 naming it, before anything is
stored or sent: never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from ...config import GatewayConfig
from ...config_sections import ProviderSettings
from ...errors import APIError, invalid_request
from ..results import Item
from ..translation.builtin_tools import for_tool

Serving = Literal["upstream", "gateway", "client"]

# Tools every wire offers the model as functions (a Responses upstream takes them as they are).
CLIENT_FUNCTIONS = frozenset({"function", "custom", "namespace"})
WEB_SEARCH_TYPES = (
    "web_search",
    "web_search_2025_08_26",
    "web_search_preview",
    "web_search_preview_2025_03_11",
)


def _searches_here(kind: str) -> Callable[[ProviderSettings, GatewayConfig], bool]:
    def searches(provider: ProviderSettings, config: GatewayConfig) -> bool:
        return config.web_search.configured and not provider.runs_natively(kind)

    return searches


def _searches_files(provider: ProviderSettings, config: GatewayConfig) -> bool:
    """A Responses upstream runs ``file_search`` itself only when ``native_tools`` names it
    (its vector store ids are its own, not the gateway's)."""
    native = provider.native_tools is not None and "file_search" in provider.native_tools
    return config.file_search.configured and not (provider.wire.runs_tools and native)


# The kinds the gateway runs itself, and for which providers (given the configuration).
GATEWAY_RUN: Mapping[str, Callable[[ProviderSettings, GatewayConfig], bool]] = MappingProxyType(
    {
        "mcp": lambda provider, config: provider.mcp_runner() == "gateway",
        **{kind: _searches_here(kind) for kind in WEB_SEARCH_TYPES},
        "file_search": _searches_files,
    }
)


def serving(provider: ProviderSettings, tool: Item, config: GatewayConfig) -> Serving | None:
    """Who serves ``tool`` for ``provider``'s model; ``None``: no one."""
    kind = tool.get("type")
    if kind in CLIENT_FUNCTIONS:
        return "client"
    runs_here = GATEWAY_RUN.get(str(kind))
    if runs_here is not None and runs_here(provider, config):
        return "gateway"
    if provider.wire.runs_tools:
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
            param=f"tools[{index}].{'execution' if kind == 'tool_search' else 'environment.type'}",
        )
    return invalid_request(
        f"Tool '{kind}' is not supported with {model}.", param=f"tools[{index}].type"
    )


def check_tools(
    tools: Any, model: str, providers: Iterable[ProviderSettings], config: GatewayConfig
) -> None:
    """A 400 for the first tool of ``tools`` that one of ``providers`` (every provider the
    turn may reach) would not serve."""
    if not isinstance(tools, list):
        return
    for provider in providers:
        for index, tool in enumerate(tools):
            if isinstance(tool, dict) and serving(provider, tool, config) is None:
                raise unsupported_tool(tool, index, model)
