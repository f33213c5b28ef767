"""Routing: deployments and keys tried in turn, fallbacks, cooldowns, never two answers."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import genai_prices
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway import ConfigError, create_app, parse_config
from gateway.cli.show import render_response
from session import SQLiteStore, StoredResponse

from .conftest import Gateway
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

ERROR = {"error": {"message": "upstream trouble", "type": "server_error"}}


def routing_config(url: str, db: Path) -> dict[str, Any]:
    chat = {"wire_api": "chat_completions", "base_url": f"{url}/v1"}
    return {
        "session": {"backend": "sqlite", "sqlite": {"path": str(db)}},
        "providers": {
            "east": {**chat, "api_key": UPSTREAM_KEY},
            "west": {**chat, "api_key": UPSTREAM_KEY},
            "keyed": {**chat, "api_keys": [{"key": "sk-key-one-1111"}, {"key": "sk-key-two-2222"}]},
            "echo": {"wire_api": "echo"},
        },
        "models": {
            "spread": {
                "deployments": [
                    {"provider": "east", "upstream_model": "model-east"},
                    {"provider": "west", "upstream_model": "model-west"},
                ]
            },
            "two-keys": {"provider": "keyed", "upstream_model": "model-keyed"},
            "primary": {
                "provider": "east",
                "upstream_model": "model-primary",
                "fallbacks": ["backup"],
                "retry": {"attempts": 2, "max_wait_seconds": 0.05},
            },
            "backup": {"provider": "west", "upstream_model": "model-backup"},
            "alone": {"provider": "east", "upstream_model": "model-alone"},
            "priced": {
                "provider": "east",
                "upstream_model": "model-priced",
                "pricing": {"input": 1.0, "cached_input": 0.5, "output": 2.0},
            },
            "mini": {"provider": "east", "upstream_model": "gpt-4o-mini"},
            "mini-priced": {
                "provider": "east",
                "upstream_model": "gpt-4o-mini",
                "pricing": {"input": 1.0, "cached_input": 0.5, "output": 2.0},
            },
            "echo-mini": {"provider": "echo", "upstream_model": "gpt-4o-mini"},
        },
        "routing": {"cooldown": {"allowed_fails": 1, "seconds": 600, "max_seconds": 600}},
    }


@pytest.fixture
def routed(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Gateway]:
    fake, url = fake_upstream
    config = parse_config(routing_config(url, tmp_path / "s.db"), env={})
    with serve(create_app(config)) as gateway_url:
        gateway = Gateway(gateway_url, config, fake)
        yield gateway
        for client in gateway.clients:
            client.close()


def models_sent(fake: FakeUpstream) -> list[str]:
    return [request["model"] for request in fake.requests]


def stored_metadata(gateway: Gateway, response_id: str) -> dict[str, Any]:
    with closing(sqlite3.connect(gateway.config.session.sqlite.path)) as conn:
        (metadata,) = conn.execute(
            "SELECT metadata FROM responses WHERE id = ?", (response_id,)
        ).fetchone()
    stored: dict[str, Any] = json.loads(metadata)
    return stored


def stored_route(gateway: Gateway, response_id: str) -> dict[str, Any]:
    route: dict[str, Any] = stored_metadata(gateway, response_id)["route"]
    return route


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_deployment_is_retried_on_the_other(routed: Gateway, stream: bool) -> None:
    routed.fake.script(Reply(status=500, error_body=ERROR))
    client = routed.client()
    if stream:
        events = list(client.responses.create(model="spread", input="hi", stream=True))
        assert [e.type for e in events].count("response.created") == 1
        response = events[-1].response  # type: ignore[union-attr]
    else:
        response = client.responses.create(model="spread", input="hi")
    assert response.status == "completed" and response.output_text == "reply to: hi"
    first, second = models_sent(routed.fake)
    assert {first, second} == {"model-east", "model-west"}
    route = stored_route(routed, response.id)
    assert [a["outcome"] for a in route["attempts"]] == ["http_500", "answered"]
    assert route["answered_by"].endswith(second)


def test_a_rate_limited_key_gives_way_to_the_other_key(routed: Gateway) -> None:
    routed.fake.script(Reply(status=429, error_body=ERROR))
    response = routed.client().responses.create(model="two-keys", input="hi")
    assert response.status == "completed"
    keys = [headers["authorization"] for headers in routed.fake.headers]
    assert len(keys) == 2 and keys[0] != keys[1]
    assert set(keys) == {"Bearer sk-key-one-1111", "Bearer sk-key-two-2222"}


def test_a_model_falls_back_once_its_own_attempts_fail(routed: Gateway) -> None:
    routed.fake.script(Reply(status=503, error_body=ERROR), Reply(status=502, error_body=ERROR))
    response = routed.client().responses.create(model="primary", input="hi")
    assert response.status == "completed" and response.model == "primary"
    assert models_sent(routed.fake) == ["model-primary", "model-primary", "model-backup"]
    route = stored_route(routed, response.id)
    assert route["answered_by"] == "west/model-backup"
    assert [a["outcome"] for a in route["attempts"]] == ["http_503", "http_502", "answered"]
    metrics = httpx.get(f"{routed.url}/metrics").text
    assert 'deployment="west/model-backup",event="fallback"' in metrics


@pytest.mark.parametrize("stream", [False, True])
def test_the_answering_deployment_is_named_in_a_header(routed: Gateway, stream: bool) -> None:
    routed.fake.script(Reply(status=503, error_body=ERROR), Reply(status=502, error_body=ERROR))
    body = {"model": "primary", "input": "hi", "stream": stream}
    with httpx.stream("POST", f"{routed.url}/v1/responses", json=body) as answer:
        assert answer.status_code == 200
        assert answer.headers["x-gateway-upstream"] == "west/model-backup"
        answer.read()
    refused = httpx.post(f"{routed.url}/v1/responses", json={"model": "nope", "input": "hi"})
    assert "x-gateway-upstream" not in refused.headers  # it reached no upstream


def test_a_client_error_is_not_retried(routed: Gateway) -> None:
    routed.fake.script(Reply(status=400, error_body={"error": {"message": "bad"}}))
    answer = httpx.post(f"{routed.url}/v1/responses", json={"model": "spread", "input": "hi"})
    assert answer.status_code == 400
    assert len(routed.fake.requests) == 1
    assert answer.headers["x-gateway-upstream"] in ("east/model-east", "west/model-west")


def test_after_the_first_delta_a_failure_is_the_answer(routed: Gateway) -> None:
    routed.fake.script(Reply(text="partial answer that breaks", break_after=3))
    events = list(routed.client().responses.create(model="spread", input="hi", stream=True))
    assert events[-1].type == "response.failed"
    assert "response.output_text.delta" in [e.type for e in events]
    assert len(routed.fake.requests) == 1  # never a second answer


def test_a_stream_that_breaks_before_any_output_is_retried(routed: Gateway) -> None:
    routed.fake.script(Reply(text="lost", break_after=1))
    events = list(routed.client().responses.create(model="spread", input="hi", stream=True))
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "reply to: hi"  # type: ignore[union-attr]
    assert len(routed.fake.requests) == 2


def test_a_failing_deployment_cools_down_and_the_operator_sees_it(routed: Gateway) -> None:
    routed.fake.script(Reply(status=500, error_body=ERROR))
    routed.client().responses.create(model="spread", input="one")
    failed = routed.fake.requests[0]["model"]
    routes = httpx.get(f"{routed.url}/v1/gateway/routes").json()
    cooling = routes["cooldowns"]
    deployment = next(name for name in cooling if name.endswith(failed))
    assert cooling[deployment]["cooling_down_until"] is not None
    assert cooling[deployment]["last_error"] == "http_500"
    assert "sk-key" not in json.dumps(routes)
    for _ in range(5):  # the cooling deployment is tried last: never while the other answers
        routed.client().responses.create(model="spread", input="again")
    assert failed not in models_sent(routed.fake)[2:]
    assert httpx.post(f"{routed.url}/v1/gateway/routes/reset").status_code == 200
    assert httpx.get(f"{routed.url}/v1/gateway/routes").json()["cooldowns"] == {}


def test_when_everything_fails_the_last_error_is_the_answer(routed: Gateway) -> None:
    routed.fake.script(*[Reply(status=502, error_body=ERROR)] * 4)
    answer = httpx.post(f"{routed.url}/v1/responses", json={"model": "spread", "input": "hi"})
    assert answer.status_code == 502
    assert len(routed.fake.requests) == 2  # each deployment once
    assert routed.stored_rows() == 0


def test_a_single_deployment_without_retries_calls_once(routed: Gateway) -> None:
    routed.fake.script(Reply(status=500, error_body=ERROR))
    answer = httpx.post(f"{routed.url}/v1/responses", json={"model": "alone", "input": "hi"})
    assert answer.status_code == 502 and len(routed.fake.requests) == 1


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (
            {"provider": "east", "deployments": [{"provider": "west"}]},
            "give provider (with upstream_model) or deployments, not both",
        ),
        ({"provider": "east", "fallbacks": ["nowhere"]}, "unknown model 'nowhere'"),
        ({"deployments": [{"provider": "north"}]}, "unknown provider 'north'"),
    ],
)
def test_routing_configuration_problems(model: dict[str, Any], problem: str) -> None:
    raw = routing_config("http://127.0.0.1:9", Path("unused.db"))
    raw["models"] = {"m": model}
    with pytest.raises(ConfigError) as refused:
        parse_config(raw, env={})
    assert problem in str(refused.value)


def test_a_priced_turn_records_its_cost(routed: Gateway) -> None:
    response = routed.client().responses.create(model="priced", input="hi")
    # The fake's usage: 11 input tokens (3 of them cached) and 7 output tokens.
    expected = (8 * 1.0 + 3 * 0.5 + 7 * 2.0) / 1_000_000
    metadata = stored_metadata(routed, response.id)
    assert metadata["cost_usd"] == pytest.approx(expected)
    # A model with one deployment records it too, and who asked.
    assert metadata["route"] == {"answered_by": "east/model-priced", "key": None, "attempts": []}
    assert metadata["request_id"] and "key_id" not in metadata  # no keys here
    assert 0 <= metadata["time_to_first_token_seconds"] < 60
    metrics = httpx.get(f"{routed.url}/metrics").text
    line = next(x for x in metrics.splitlines() if x.startswith("gateway_cost_usd_total{"))
    assert 'model="priced"' in line and float(line.split()[-1]) == pytest.approx(expected)


def test_a_request_too_long_goes_to_the_larger_model(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, url = fake_upstream
    raw = routing_config(url, tmp_path / "s.db")
    raw["models"]["small"] = {
        "provider": "east",
        "upstream_model": "model-small",
        "context_window_fallbacks": ["large"],
    }
    raw["models"]["large"] = {"provider": "west", "upstream_model": "model-large"}
    too_long = {"error": {"message": "too long", "code": "context_length_exceeded"}}
    fake.script(Reply(status=400, error_body=too_long))
    with serve(create_app(parse_config(raw, env={}))) as gateway_url:
        answer = httpx.post(
            f"{gateway_url}/v1/responses", json={"model": "small", "input": "a long question"}
        )
    assert answer.status_code == 200, answer.text
    assert models_sent(fake) == ["model-small", "model-large"]


def test_gateway_usage_reports_what_priced_turns_cost(routed: Gateway) -> None:
    import asyncio

    from session import SQLiteStore

    routed.client().responses.create(model="priced", input="one")
    routed.client().responses.create(model="priced", input="two")

    async def rows() -> list[Any]:
        store = SQLiteStore(routed.config.session.sqlite.path)
        try:
            return await store.usage(None, 0.0)
        finally:
            await store.close()

    [row] = [row for row in asyncio.run(rows()) if row.model == "priced"]
    assert row.responses == 2
    assert row.cost_usd == pytest.approx(2 * (8 * 1.0 + 3 * 0.5 + 7 * 2.0) / 1_000_000)


def counted(gateway: Gateway, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of counter ``name`` on ``/metrics``, by their labels."""
    text = httpx.get(f"{gateway.url}/metrics").text
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


def test_metrics_count_each_attempt_by_outcome_and_each_retry_by_reason(routed: Gateway) -> None:
    routed.fake.script(Reply(status=500, error_body=ERROR))
    first = routed.client().responses.create(model="spread", input="hi")
    failed, answered = stored_route(routed, first.id)["attempts"]
    flaky, steady = (attempt["deployment"].split("/")[0] for attempt in (failed, answered))
    routed.fake.script(Reply(text="lost", break_after=1))
    events = list(routed.client().responses.create(model="spread", input="hi", stream=True))
    assert events[-1].type == "response.completed"
    broke = stored_route(routed, events[-1].response.id)["attempts"][0]  # type: ignore[union-attr]
    assert broke["outcome"] == "failed_before_output"
    routed.client().responses.create(model="alone", input="hi")  # one call, no routing

    attempts = counted(routed, "gateway_upstream_attempts_total")
    by_outcome: dict[tuple[str, str], float] = {}
    for labels, value in attempts.items():
        named = dict(labels)
        assert set(named) == {"provider", "model", "outcome"}
        key = (named["model"], named["outcome"])
        by_outcome[key] = by_outcome.get(key, 0) + value
    assert by_outcome == {
        ("spread", "http_500"): 1.0,
        ("spread", "failed_before_output"): 1.0,
        ("spread", "answered"): 2.0,
        ("alone", "answered"): 1.0,
    }
    assert attempts[(("model", "spread"), ("outcome", "http_500"), ("provider", flaky))] == 1.0
    assert attempts[(("model", "alone"), ("outcome", "answered"), ("provider", "east"))] == 1.0
    retries = counted(routed, "gateway_upstream_retries_total")
    broke_on = broke["deployment"].split("/")[0]
    expected: dict[tuple[tuple[str, str], ...], float] = {
        (("provider", flaky), ("reason", "http_500")): 1.0,
        (("provider", broke_on), ("reason", "failed_before_output")): 1.0,
    }
    assert retries == expected
    assert steady != flaky


def test_a_well_known_model_is_priced_from_genai_prices_unless_configured(
    routed: Gateway,
) -> None:
    client = routed.client()
    listed = stored_metadata(routed, client.responses.create(model="mini", input="hi").id)
    # The fake's usage: 11 input tokens (3 of them cached) and 7 output tokens.
    usage = genai_prices.Usage(input_tokens=11, cache_read_tokens=3, output_tokens=7)
    expected = genai_prices.calc_price(usage, "gpt-4o-mini", provider_id="openai").total_price
    assert expected > 0
    assert (listed["cost_usd"], listed["cost_source"]) == (float(expected), "genai-prices")
    configured = client.responses.create(model="mini-priced", input="hi")
    metadata = stored_metadata(routed, configured.id)
    own = (8 * 1.0 + 3 * 0.5 + 7 * 2.0) / 1_000_000
    assert metadata["cost_usd"] == pytest.approx(own) and metadata["cost_source"] == "config"
    for model in ("alone", "echo-mini"):  # a name the library does not know, and echo
        unknown = stored_metadata(routed, client.responses.create(model=model, input="hi").id)
        assert "cost_usd" not in unknown and "cost_source" not in unknown
    shown = render_response(asyncio.run(_stored(routed, configured.id)))
    shown_lines = [line.split() for line in shown.splitlines()]
    assert ["cost_source", "config"] in shown_lines and ["cost_usd", str(own)] in shown_lines


async def _stored(gateway: Gateway, response_id: str) -> StoredResponse:
    store = SQLiteStore(gateway.config.session.sqlite.path)
    try:
        return await store.get("default", response_id)
    finally:
        await store.close()
