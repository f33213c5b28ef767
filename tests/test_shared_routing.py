"""Two gateway instances on one store (PostgreSQL) or one Redis share their limits: a client
key's request rate, a provider key's rate, cooldowns and budgets hold across both."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import GatewayConfig, create_app, parse_config

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

ADMIN = "admin-key-0123456789abcdef"
ERROR = {"error": {"message": "upstream trouble", "type": "server_error"}}


def shared_config(url: str, session: dict[str, Any], run: str, **extra: Any) -> GatewayConfig:
    """Keys with limits and a budget; a model on two deployments; a provider key limit.
    Buckets in Redis outlive a test: the keys of each ``run`` have names of their own."""
    chat = {"wire_api": "chat_completions", "base_url": f"{url}/v1"}
    raw = {
        "session": session,
        "auth": {
            "mode": "keys",
            "admin_key": ADMIN,
            "keys": [
                {"key": "limited-key-0123456789", "project": "p", "name": f"limited-{run}",
                 "requests_per_minute": 4},
                {"key": "budget-key-0123456789", "project": "p", "name": f"budget-{run}",
                 "budget_usd": 0.00001},
                {"key": "tokens-key-0123456789", "project": "p", "name": f"tokens-{run}",
                 "budget_tokens": 5},
                {"key": "plain-key-0123456789", "project": "p", "name": f"plain-{run}"},
            ],
        },
        "providers": {
            "east": {**chat, "api_key": UPSTREAM_KEY},
            "west": {**chat, "api_key": UPSTREAM_KEY},
            "metered": {**chat, "api_keys": [{"key": f"sk-metered-{run}-0000",
                                              "requests_per_minute": 2}]},
        },
        "models": {
            "spread": {"deployments": [
                {"provider": "east", "upstream_model": "model-east"},
                {"provider": "west", "upstream_model": "model-west"},
            ]},
            "metered": {"provider": "metered", "upstream_model": "model-metered"},
            "priced": {"provider": "east", "upstream_model": "model-priced",
                       "pricing": {"input": 1.0, "output": 2.0}},
        },
        "routing": {"cooldown": {"allowed_fails": 1, "seconds": 600, "max_seconds": 600},
                    **extra},
    }  # fmt: skip
    return parse_config(raw, env={})


@pytest.fixture
def two_on_postgres(
    fake_upstream: tuple[FakeUpstream, str], postgres_dsn: str
) -> Iterator[tuple[FakeUpstream, list[str]]]:
    fake, url = fake_upstream
    session = {"backend": "postgres", "postgres": {"dsn": postgres_dsn}}
    config = shared_config(url, session, uuid.uuid4().hex[:8])
    with ExitStack() as stack:
        urls = [stack.enter_context(serve(create_app(config))) for _ in range(2)]
        yield fake, urls


def post(url: str, key: str, model: str = "spread", text: str = "hi") -> httpx.Response:
    return httpx.post(
        f"{url}/v1/responses",
        json={"model": model, "input": text},
        headers={"authorization": f"Bearer {key}"},
    )


def test_a_client_keys_rate_holds_across_instances(
    two_on_postgres: tuple[FakeUpstream, list[str]],
) -> None:
    fake, (first, second) = two_on_postgres
    statuses = [post(url, "limited-key-0123456789").status_code for url in [first, second] * 3]
    assert statuses == [200, 200, 200, 200, 429, 429]
    assert len(fake.requests) == 4  # what reached the upstream
    refused = post(first, "limited-key-0123456789")
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert int(refused.headers["retry-after"]) >= 1
    assert post(second, "plain-key-0123456789").status_code == 200  # other keys go on


def test_a_provider_keys_rate_holds_across_instances(
    two_on_postgres: tuple[FakeUpstream, list[str]],
) -> None:
    fake, (first, second) = two_on_postgres
    answers = [post(url, "plain-key-0123456789", "metered") for url in (first, second, first)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert len(fake.requests) == 2
    assert "requests_per_minute" in answers[2].json()["error"]["message"]
    assert "sk-metered" not in answers[2].text


def test_a_cooldown_started_on_one_instance_is_honoured_by_the_other(
    two_on_postgres: tuple[FakeUpstream, list[str]],
) -> None:
    fake, (first, second) = two_on_postgres
    fake.script(Reply(status=500, error_body=ERROR))
    assert post(first, "plain-key-0123456789").status_code == 200  # retried on the other
    failed = fake.requests[0]["model"]
    admin = {"authorization": f"Bearer {ADMIN}"}
    deadline = time.monotonic() + 10  # "within a second"; generous for a loaded machine
    while True:
        cooling = httpx.get(f"{second}/v1/gateway/routes", headers=admin).json()["cooldowns"]
        if any(name.endswith(failed) for name in cooling) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    [name] = [name for name in cooling if name.endswith(failed)]
    assert cooling[name]["cooling_down_until"] > time.time() + 500
    for _ in range(4):
        assert post(second, "plain-key-0123456789").status_code == 200
    assert failed not in [request["model"] for request in fake.requests[2:]]
    # Ended on one instance, ended on both.
    assert httpx.post(f"{first}/v1/gateway/routes/reset", headers=admin).status_code == 200
    time.sleep(1.1)  # past the other's next read of the shared cooldowns
    assert httpx.get(f"{second}/v1/gateway/routes", headers=admin).json()["cooldowns"] == {}


def test_a_budget_stops_the_key_on_every_instance(
    two_on_postgres: tuple[FakeUpstream, list[str]],
) -> None:
    fake, (first, second) = two_on_postgres
    assert post(first, "budget-key-0123456789", "priced").status_code == 200
    for url in (first, second):
        refused = post(url, "budget-key-0123456789", "priced")
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert (error["type"], error["code"]) == ("insufficient_quota", "insufficient_quota")
        assert "budget of $0.00" in error["message"]
    assert len(fake.requests) == 1  # nothing more was sent upstream
    assert post(second, "plain-key-0123456789", "priced").status_code == 200


def test_a_token_budget_stops_the_key_on_every_instance(
    two_on_postgres: tuple[FakeUpstream, list[str]],
) -> None:
    fake, (first, second) = two_on_postgres
    assert post(first, "tokens-key-0123456789").status_code == 200  # an unpriced model
    for url in (first, second):
        refused = post(url, "tokens-key-0123456789")
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert error["code"] == "insufficient_quota"
        assert "budget of 5 tokens" in error["message"]
    assert len(fake.requests) == 1


def test_through_redis_instances_on_their_own_files_share_a_keys_rate(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    redis_url = "redis://127.0.0.1:6379/0"
    try:
        import redis

        redis.Redis.from_url(redis_url).ping()
    except Exception as error:  # no Redis: say why
        pytest.skip(f"Redis is not reachable at {redis_url}: {error}")
    fake, url = fake_upstream
    run = uuid.uuid4().hex[:8]
    with ExitStack() as stack:
        urls = [
            stack.enter_context(
                serve(
                    create_app(
                        shared_config(
                            url,
                            {"backend": "sqlite", "sqlite": {"path": str(tmp_path / f"{n}.db")}},
                            run,
                            redis_url=redis_url,
                        )
                    )
                )
            )
            for n in range(2)
        ]
        statuses = [post(u, "limited-key-0123456789").status_code for u in urls * 3]
    assert statuses == [200, 200, 200, 200, 429, 429]
    assert len(fake.requests) == 4
