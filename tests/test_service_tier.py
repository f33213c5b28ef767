"""``service_tier``: passed where the upstream takes it, and the tier actually used reported."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Gateway
from .fake_anthropic import FakeAnthropic
from .fake_upstream import Reply
from .test_anthropic_wire import claude  # noqa: F401

pytestmark = [pytest.mark.api]


def create(gateway: Gateway, stream: bool, **request: Any) -> Any:
    client = gateway.client()
    if not stream:
        return client.responses.create(**request)
    events = list(client.responses.create(stream=True, **request))
    assert events[0].response.service_tier in ("default", request.get("service_tier"))
    return events[-1].response


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("asked", "used"), [("fast", "priority"), ("ultrafast", "ultrafast")])
def test_the_tier_asked_goes_upstream_and_the_tier_used_comes_back(
    gateway: Gateway, model: str, stream: bool, asked: str, used: str
) -> None:
    gateway.fake.script(Reply(text="Quick.", service_tier=used))
    answer = create(gateway, stream, model=model, input="Hurry.", service_tier=asked)
    assert gateway.fake.last["service_tier"] == asked
    assert answer.service_tier == used
    assert gateway.client().responses.retrieve(answer.id).service_tier == used


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
def test_without_a_tier_from_upstream_the_one_asked_is_reported(
    gateway: Gateway, model: str
) -> None:
    asked = gateway.client().responses.create(model=model, input="x", service_tier="priority")
    assert asked.service_tier == "priority"
    unasked = gateway.client().responses.create(model=model, input="x", store=False)
    assert unasked.service_tier == "default" and "service_tier" not in gateway.fake.last


def test_the_anthropic_wire_is_not_sent_a_tier_and_reports_the_one_used(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    answer = gateway.client().responses.create(model="claude", input="x", service_tier="fast")
    assert "service_tier" not in fake.last
    assert answer.service_tier == "default"  # the Messages usage's "standard"
