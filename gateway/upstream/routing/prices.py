"""What a turn cost: the model's own ``pricing``, else the published prices of well-known
models, from the ``genai-prices`` library.

The library's price list ships inside the package (it is never updated over the network
here). A deployment is looked up once, by its upstream model name and its provider: the
provider the base URL belongs to (``api.openai.com``, ``api.deepseek.com``, …), or, for a
base URL the library does not know (a proxy, a local server), the provider the wire speaks
for (``chat_completions`` and ``responses``: OpenAI; ``anthropic``: Anthropic). A model the
library does not list, and the ``echo`` wire, are not priced: their cost stays unknown.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...config_sections import ProviderSettings
from ...routing_settings import Pricing

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, Provider

logger = logging.getLogger(__name__)

CostSource = Literal["config", "genai-prices"]


@dataclass(frozen=True)
class Price:
    """How one deployment's turns are priced, and where the prices come from."""

    source: CostSource
    pricing: Pricing | None = None  # ``source == "config"``
    model: ModelInfo | None = None  # ``source == "genai-prices"``
    provider: Provider | None = None

    def cost(self, usage: dict[str, Any]) -> float | None:
        """What a Responses ``usage`` costs, in USD (``None``: it cannot be priced)."""
        if self.pricing is not None:
            return self.pricing.cost(usage)
        assert self.model is not None and self.provider is not None
        from genai_prices import Usage

        details = usage.get("input_tokens_details") or {}
        counted = Usage(
            input_tokens=_count(usage.get("input_tokens")),
            cache_read_tokens=_count(details.get("cached_tokens")),
            cache_write_tokens=_count(details.get("cache_write_tokens")),
            output_tokens=_count(usage.get("output_tokens")),
        )
        try:
            return float(self.model.calc_price(counted, self.provider).total_price)
        except (LookupError, ValueError, ArithmeticError) as error:
            logger.warning("genai-prices could not price %s: %s", self.model.id, error)
            return None


def price_of(
    provider: ProviderSettings, upstream_model: str, pricing: Pricing | None
) -> Price | None:
    """How a deployment is priced: its model's ``pricing`` if set, else the library's
    prices for ``upstream_model`` at ``provider``, else not at all."""
    if pricing is not None:
        return Price("config", pricing=pricing)
    wire_provider = provider.wire.vendor
    if wire_provider is None:  # echo
        return None
    from genai_prices.data_snapshot import get_snapshot

    prices = get_snapshot()
    base_url = provider.base_url or provider.wire.default_base_url
    try:
        known = prices.find_provider(None, None, base_url)
    except LookupError:
        known = prices.find_provider(None, wire_provider, None)
    model = known.find_model(upstream_model, all_providers=prices.providers)
    if model is None:
        return None
    return Price("genai-prices", model=model, provider=known)


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0
