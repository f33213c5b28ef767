"""Routing affinity and account-bound items, over real HTTP against a fake Responses API
that caches prompts per key and model and refuses another account's reasoning."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI
from prometheus_client.parser import text_string_to_metric_families

from bench import affinity as bench
from bench.caching_upstream import CachingUpstream
from gateway import create_app, parse_config

from .servers import serve

pytestmark = [pytest.mark.api]

FIRST_KEY, SECOND_KEY = "sk-first-account-aaaaaa", "sk-second-account-bbbbbb"


@pytest.fixture(scope="module")
def caching() -> Iterator[tuple[CachingUpstream, str]]:
    upstream = CachingUpstream()
    with serve(upstream.app) as url:
        yield upstream, url


@pytest.fixture
def upstream(caching: tuple[CachingUpstream, str]) -> Iterator[tuple[CachingUpstream, str]]:
    caching[0].reset()
    caching[0].reasoning = True
    yield caching
    caching[0].reset()


def accounts_config(url: str, db: Path, *, affinity: bool = True) -> dict[str, Any]:
    """Two accounts of a Responses provider: ``primary`` on the first falls back to
    ``backup`` on the second; ``spread`` goes to either."""
    wire = {"wire_api": "responses", "base_url": f"{url}/v1"}
    return {
        "session": {"backend": "sqlite", "sqlite": {"path": str(db)}},
        "providers": {
            "first": {**wire, "api_key": FIRST_KEY},
            "second": {**wire, "api_key": SECOND_KEY},
        },
        "models": {
            "primary": {"provider": "first", "upstream_model": "model-first",
                        "fallbacks": ["backup"]},
            "backup": {"provider": "second", "upstream_model": "model-second"},
            "spread": {"deployments": [
                {"provider": "first", "upstream_model": "model-spread"},
                {"provider": "second", "upstream_model": "model-spread"},
            ]},
        },
        "routing": {"affinity": affinity,
                    "cooldown": {"allowed_fails": 1, "seconds": 600, "max_seconds": 600}},
    }  # fmt: skip


def client(url: str) -> OpenAI:
    return OpenAI(base_url=f"{url}/v1", api_key="unused", _strict_response_validation=True)


def test_a_fallback_to_another_account_sends_it_none_of_the_first_accounts_reasoning(
    upstream: tuple[CachingUpstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = upstream
    config = parse_config(accounts_config(url, tmp_path / "s.db"), env={})
    with serve(create_app(config)) as gateway:
        sdk = client(gateway)
        first = sdk.responses.create(model="primary", input="remember 7")
        fake.failing.add("model-first")
        with caplog.at_level(logging.INFO):
            second = sdk.responses.create(
                model="primary", input="and now?", previous_response_id=first.id
            )
        assert second.status == "completed"
        account, sent = fake.requests[-1]
        assert (account, sent["model"]) == (SECOND_KEY[-6:], "model-second")
        assert "reasoning" not in [item.get("type") for item in sent["input"]]
        assert [item.get("role") for item in sent["input"]] == ["user", "assistant", "user"]
        assert "dropped 1 reasoning item(s) made by another account" in caplog.text
        [reasoning] = [item for item in first.output if item.type == "reasoning"]
        # Sealed: only the gateway reads it, and knows whose it is.
        assert reasoning.encrypted_content and reasoning.encrypted_content.startswith("gwr1.")
        assert FIRST_KEY[-6:] not in reasoning.encrypted_content
        # The second account's own reasoning goes back to it on the next turn.
        third = sdk.responses.create(
            model="primary", input="once more", previous_response_id=second.id
        )
        assert third.status == "completed"
        account, sent = fake.requests[-1]
        assert account == SECOND_KEY[-6:]
        replayed = [i["encrypted_content"] for i in sent["input"] if i.get("type") == "reasoning"]
        assert replayed == [f"enc:{SECOND_KEY[-6:]}:3"]


def test_the_second_account_refuses_the_first_accounts_own_reasoning(
    upstream: tuple[CachingUpstream, str], tmp_path: Path
) -> None:
    """What a fallback met before items were bound (and what a stateless client that sends
    one account's raw state to another still meets): the second account refuses it."""
    _fake, url = upstream
    config = parse_config(accounts_config(url, tmp_path / "s.db"), env={})
    foreign = {"type": "reasoning", "summary": [], "encrypted_content": "enc:aaaaaa:1"}
    with serve(create_app(config)) as gateway:
        refused = httpx.post(
            f"{gateway}/v1/responses",
            json={"model": "backup", "input": [{"role": "user", "content": "hi"}, foreign]},
        )
    assert refused.status_code == 400
    assert "could not be verified" in refused.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_chain_with_reasoning_stays_on_the_account_that_can_replay_it(
    upstream: tuple[CachingUpstream, str], tmp_path: Path, stream: bool
) -> None:
    """Even without affinity, routing tries first the account whose items the chain holds."""
    fake, url = upstream
    config = parse_config(accounts_config(url, tmp_path / "s.db", affinity=False), env={})
    with serve(create_app(config)) as gateway:
        sdk = client(gateway)
        previous = None
        for number in range(6):
            if stream:
                events = list(
                    sdk.responses.create(
                        model="spread", input=f"turn {number}", previous_response_id=previous,
                        stream=True,
                    )
                )  # fmt: skip
                response = events[-1].response  # type: ignore[union-attr]
            else:
                response = sdk.responses.create(
                    model="spread", input=f"turn {number}", previous_response_id=previous
                )
            assert response.status == "completed"
            previous = response.id
    assert len({account for account, _ in fake.requests}) == 1
    assert len(fake.requests) == 6  # none refused


def test_a_chain_keeps_its_prompt_cache_with_affinity_and_loses_it_without() -> None:
    runs = bench.measure(20)
    kept, spread, failover = runs["affinity"], runs["no affinity"], runs["failover"]
    assert bench.moves(kept) == 0
    # Every turn reads the whole previous prompt from the cache.
    assert [t.cached_tokens for t in kept[1:]] == [t.input_tokens for t in kept[:-1]]
    assert bench.moves(spread) > 0  # four places, chosen by weight each turn
    assert bench.hit_rate(spread) < bench.hit_rate(kept)
    # The failover moves once, then sticks to the new place.
    assert bench.moves(failover) == 1
    assert failover[9].target != failover[10].target
    after = failover[11:]
    assert [t.cached_tokens for t in after] == [t.input_tokens for t in failover[10:-1]]
    assert bench.hit_rate(spread) < bench.hit_rate(failover) < bench.hit_rate(kept)


def metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def test_a_move_is_recorded_on_the_turn_counted_and_logged(
    upstream: tuple[CachingUpstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = upstream
    fake.reasoning = False
    raw = bench.gateway_config(url, tmp_path / "s.db")
    with serve(create_app(parse_config(raw, env={}))) as gateway:
        turns = bench.chain(gateway, fake, 3)
        fake.failing.add(turns[-1].target[1])
        with caplog.at_level(logging.WARNING):
            moved = bench.chain_from(gateway, fake, turns[-1].response_id)
        console = httpx.get(f"{gateway}/v1/gateway/console/responses/{moved.response_id}").json()
        affinity = console["route"]["affinity"]
        assert affinity["source"] == "chain"
        assert affinity["target"] == " ".join(
            [f"east/{turns[-1].target[1]}", console["route"]["attempts"][0]["key"]]
        )
        assert (affinity["outcome"], affinity["reason"]) == ("moved", "http_500")
        assert "the chain affinity moved from east/" in caplog.text
        kept = metric(gateway, "gateway_routing_affinity_total", source="chain", outcome="kept")
        assert kept == 2
        assert metric(gateway, "gateway_routing_affinity_total", outcome="moved") == 1
        cached = metric(gateway, "gateway_prompt_cache_tokens_total", kind="cached")
        assert cached == sum(t.cached_tokens for t in [*turns, moved]) > 0


def test_a_prompt_cache_key_and_a_conversation_stick_to_one_place(
    upstream: tuple[CachingUpstream, str], tmp_path: Path
) -> None:
    fake, url = upstream
    fake.reasoning = False
    raw = bench.gateway_config(url, tmp_path / "s.db")
    with serve(create_app(parse_config(raw, env={}))) as gateway:
        sdk = client(gateway)
        for number in range(6):  # no chain: the key alone says these share a prefix
            sdk.responses.create(
                model="agent", instructions=bench.INSTRUCTIONS, input=f"task {number}",
                prompt_cache_key="repo-42",
            )  # fmt: skip
        by_key = {(account, body["model"]) for account, body in fake.requests}
        assert {body["prompt_cache_key"] for _, body in fake.requests} == {"repo-42"}
        fake.requests.clear()
        conversation = sdk.conversations.create()
        for number in range(6):
            sdk.responses.create(
                model="agent", input=f"step {number}", conversation=conversation.id
            )
        in_conversation = [(account, body["model"]) for account, body in fake.requests]
    assert len(by_key) == 1
    assert len(set(in_conversation)) == 1


def test_two_instances_on_postgres_share_affinity(
    upstream: tuple[CachingUpstream, str], postgres_dsn: str
) -> None:
    fake, url = upstream
    fake.reasoning = False
    raw = bench.gateway_config(url, Path("unused"))
    raw["session"] = {"backend": "postgres", "postgres": {"dsn": postgres_dsn}}
    config = parse_config(raw, env={})
    key = f"shared-{uuid.uuid4().hex[:8]}"
    with ExitStack() as stack:
        urls = [stack.enter_context(serve(create_app(config))) for _ in range(2)]
        previous = None
        for number in range(8):  # a chain, its turns on either instance in turn
            body: dict[str, Any] = {"model": "agent", "input": f"step {number}"}
            if previous is not None:
                body["previous_response_id"] = previous
            previous = httpx.post(f"{urls[number % 2]}/v1/responses", json=body).json()["id"]
        chained = {(account, sent["model"]) for account, sent in fake.requests}
        fake.requests.clear()
        for number in range(8):  # a prompt_cache_key, kept in the shared tables
            body = {"model": "agent", "input": f"task {number}", "prompt_cache_key": key}
            assert httpx.post(f"{urls[number % 2]}/v1/responses", json=body).status_code == 200
        by_key = {(account, sent["model"]) for account, sent in fake.requests}
    assert len(chained) == 1
    assert len(by_key) == 1


def test_a_chain_compacts_with_the_key_that_can_replay_its_reasoning(
    upstream: tuple[CachingUpstream, str], tmp_path: Path
) -> None:
    fake, url = upstream
    raw = bench.gateway_config(url, tmp_path / "s.db")
    raw["models"]["agent"]["deployments"] = raw["models"]["agent"]["deployments"][:1]
    raw["providers"]["east"]["api_keys"][1]["weight"] = 1e6  # the chain starts on the second
    with serve(create_app(parse_config(raw, env={}))) as gateway:
        sdk = client(gateway)
        previous = None
        for number in range(3):
            previous = sdk.responses.create(
                model="agent", input=f"step {number}", previous_response_id=previous
            ).id
        account = fake.requests[-1][0]
        assert account == bench.KEYS[1][-6:]
        compacted = httpx.post(
            f"{gateway}/v1/responses/compact",
            json={"model": "agent", "input": "go on", "previous_response_id": previous},
        )
        assert compacted.status_code == 200, compacted.text
        sent_by, sent = fake.requests[-1]
    assert sent_by == account
    reasoning = [i["encrypted_content"] for i in sent["input"] if i.get("type") == "reasoning"]
    assert len(reasoning) == 3 and all(r.startswith(f"enc:{account}:") for r in reasoning)


def test_a_compaction_and_a_count_go_where_the_chains_prompt_cache_is(
    upstream: tuple[CachingUpstream, str], tmp_path: Path
) -> None:
    fake, url = upstream
    fake.reasoning = False  # no account-bound item: affinity alone says where the chain is
    raw = bench.gateway_config(url, tmp_path / "s.db")
    with serve(create_app(parse_config(raw, env={}))) as gateway:
        turns = bench.chain(gateway, fake, 4)
        place = fake.requests[-1]
        compacted = httpx.post(
            f"{gateway}/v1/responses/compact",
            json={
                "model": "agent",
                "input": "go on",
                "previous_response_id": turns[-1].response_id,
            },
        )
        assert compacted.status_code == 200, compacted.text
        counted = httpx.post(
            f"{gateway}/v1/responses/compact",
            json={
                "model": "agent",
                "input": "again",
                "previous_response_id": turns[-1].response_id,
            },
        )
        assert counted.status_code == 200, counted.text
    assert {(a, b["model"]) for a, b in fake.requests[-2:]} == {(place[0], place[1]["model"])}


def test_a_compaction_falls_back_as_a_turn_does(
    upstream: tuple[CachingUpstream, str], tmp_path: Path
) -> None:
    fake, url = upstream
    config = parse_config(accounts_config(url, tmp_path / "s.db"), env={})
    with serve(create_app(config)) as gateway:
        fake.failing.add("model-first")
        compacted = httpx.post(
            f"{gateway}/v1/responses/compact", json={"model": "primary", "input": "summarise"}
        )
        fallbacks = metric(gateway, "gateway_routing_events_total", event="fallback")
    assert compacted.status_code == 200, compacted.text
    assert [body["model"] for _, body in fake.requests] == ["model-first", "model-second"]
    [item] = compacted.json()["output"]
    assert item["type"] == "compaction"
    assert fallbacks == 1


@pytest.mark.parametrize("store", [True, False])
def test_a_chain_on_one_websocket_keeps_its_place(
    upstream: tuple[CachingUpstream, str], tmp_path: Path, store: bool
) -> None:
    fake, url = upstream
    fake.reasoning = False  # else its account alone would keep the key
    raw = bench.gateway_config(url, tmp_path / "s.db")
    app = create_app(parse_config(raw, env={}))
    with serve(app) as gateway, client(gateway).responses.connect() as connection:
        previous = None
        for number in range(6):
            connection.response.create(
                model="agent", input=f"step {number}", store=store,
                previous_response_id=previous,  # type: ignore[arg-type]
            )  # fmt: skip
            for event in connection:
                if event.type in ("response.completed", "response.failed", "error"):
                    break
            assert event.type == "response.completed", event
            previous = event.response.id  # type: ignore[union-attr]
    assert len(fake.requests) == 6
    assert len({(account, body["model"]) for account, body in fake.requests}) == 1
