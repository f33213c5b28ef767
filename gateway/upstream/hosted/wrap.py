"""Which kinds the gateway runs for a turn, and the upstream that runs them."""

from __future__ import annotations

from ...config import GatewayConfig
from ...config_sections import ProviderSettings
from ..base import Upstream
from ..results import Item
from ..tool_support import serving
from ..web_search import WebSearch, has_web_search, holds_web_search
from .kind import Kind
from .run import HostedUpstream


def kinds(config: GatewayConfig, provider: ProviderSettings, request: Item) -> list[Kind]:
    """The kinds of the request's tools (or of its input's items) the gateway runs for
    ``provider``; a 400 for a tool whose options are bad."""
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
    return found


def with_hosted(
    upstream: Upstream, config: GatewayConfig, provider: ProviderSettings, request: Item
) -> Upstream:
    """``upstream``, or the loop around it running the kinds the turn needs."""
    needed = kinds(config, provider, request)
    if not needed:
        return upstream
    return HostedUpstream(upstream, needed, config.web_search.max_turn_seconds)
