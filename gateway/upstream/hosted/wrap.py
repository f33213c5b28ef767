"""Which kinds the gateway runs for a turn, and the upstream that runs them."""

from __future__ import annotations

from ...config import GatewayConfig
from ...config_sections import ProviderSettings
from ...tracing import NO_TRACER, Tracer
from ..base import Upstream
from ..results import Item
from ..transport.addresses import Resolver
from .file_search import FileSearch, Searcher, has_file_search
from .kind import Kind
from .mcp import Mcp, has_mcp, holds_mcp
from .run import HostedUpstream
from .support import serving
from .web_search import WebSearch, has_web_search, holds_web_search


def kinds(
    config: GatewayConfig,
    provider: ProviderSettings,
    request: Item,
    own_count: int,
    history_types: frozenset[str | None] | None,
    resolver: Resolver,
    files: Searcher | None = None,
    project: str = "default",
) -> list[Kind]:
    """The kinds of the request's tools (or of its input's items) the gateway runs for
    ``provider``, MCP first (its read-back counts the client's ``own_count`` items from the
    end of the input as sent); a 400 for a tool whose options are bad."""
    tools = request.get("tools") or []
    found: list[Kind] = []
    if config.web_search.configured:
        searching = [t for t in tools if has_web_search([t])]
        if any(serving(provider, t, config) == "gateway" for t in searching) or (
            not searching
            and not provider.runs_natively("web_search")
            and holds_web_search(request["input"])
        ):
            found.append(WebSearch(config.web_search, request))
    if files is not None and config.file_search.configured:
        searching = [t for t in tools if has_file_search([t])]
        if any(serving(provider, t, config) == "gateway" for t in searching) or (
            not searching
            and not provider.runs_natively("file_search")
            and any(item.get("type") == "file_search_call" for item in request["input"])
        ):
            found.append(FileSearch(config.file_search, files, project, request))
    if provider.mcp_runner() == "gateway" and (
        has_mcp(tools) or holds_mcp(request["input"], own_count, history_types)
    ):
        found.insert(0, Mcp(config.mcp, resolver, request, own_count))
    return found


async def with_hosted(
    upstream: Upstream,
    config: GatewayConfig,
    provider: ProviderSettings,
    request: Item,
    own_count: int,
    history_types: frozenset[str | None] | None,
    resolver: Resolver,
    tracer: Tracer = NO_TRACER,
    files: Searcher | None = None,
    project: str = "default",
) -> Upstream:
    """``upstream``, or the loop around it running the kinds the turn needs; their 400s
    (:meth:`Kind.check`) before anything is stored; each call run is traced by ``tracer``."""
    needed = kinds(config, provider, request, own_count, history_types, resolver, files, project)
    if not needed:
        return upstream
    for kind in needed:
        await kind.check()
    seconds = min(kind.max_turn_seconds for kind in needed)
    return HostedUpstream(upstream, needed, seconds, tracer)
