"""The prices of names only ``default_provider`` routes: looked up once, and only the most
recent few kept."""

from __future__ import annotations

import pytest

from gateway import parse_config
from gateway.observability.metrics import Metrics
from gateway.sealing import Sealer
from gateway.turn.upstreams import UNLISTED_PRICES, Upstreams
from session.shared import InProcessLimits

pytestmark = [pytest.mark.unit]


def test_an_unlisted_names_price_is_looked_up_once_and_few_are_kept() -> None:
    config = parse_config(
        {
            "providers": {"openai": {"wire_api": "chat_completions", "base_url": "http://x/v1"}},
            "default_provider": "openai",
        },
        env={},
    )
    upstreams = Upstreams(
        config, {}, Metrics(), Sealer("a-secret-of-sixteen-or-more"), InProcessLimits()
    )
    route = upstreams.route("gpt-4o-mini")
    first = upstreams._price("gpt-4o-mini", route)
    assert first is not None and first.source == "genai-prices"
    assert upstreams._price("gpt-4o-mini", route) is first  # not looked up again
    for number in range(UNLISTED_PRICES + 10):
        name = f"unknown-{number}"
        assert upstreams._price(name, upstreams.route(name)) is None
    assert len(upstreams._unlisted_prices) == UNLISTED_PRICES
    assert ("gpt-4o-mini", route.deployment) not in upstreams._unlisted_prices
