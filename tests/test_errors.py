"""Bad input and failing upstreams: OpenAI-shaped errors, the right status, nothing stored."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import refusing_url, serve

pytestmark = [pytest.mark.api]


def post(gateway: Gateway, body: Any = None, **options: Any) -> httpx.Response:
    if body is not None:
        options["json"] = body
    options.setdefault("headers", {"content-type": "application/json"})
    return httpx.post(f"{gateway.url}/v1/responses", timeout=30, **options)


def assert_error(response: httpx.Response, status: int, param: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param
    assert "Traceback" not in response.text and UPSTREAM_KEY not in response.text
    return dict(error)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "no model"}, "model"),
        ({"model": 5, "input": "x"}, "model"),
        ({"model": "echo", "input": "x", "stream": "yes"}, "stream"),
        ({"model": "echo", "input": 7}, "input"),
        ({"model": "echo", "input": ["not an object"]}, "input[0]"),
        ({"model": "echo", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "echo", "input": "x", "temperature": 5}, "temperature"),
        ({"model": "echo", "input": "x", "metadata": {"k": 1}}, "metadata.k"),
        (
            {"model": "echo", "input": "x", "previous_response_id": "r", "conversation": "c"},
            "conversation",
        ),
    ],
)
def test_invalid_bodies_name_the_param(gateway: Gateway, body: dict[str, Any], param: str) -> None:
    error = assert_error(post(gateway, body), 400, param)
    assert error["type"] == "invalid_request_error"
    assert gateway.stored_rows() == 0


def test_invalid_json_and_non_objects(gateway: Gateway) -> None:
    assert assert_error(post(gateway, content=b"{nope"), 400)["code"] == "invalid_json"
    assert assert_error(post(gateway, content=b"[1, 2]"), 400)["code"] == "invalid_json"
    assert (
        assert_error(post(gateway, content="\u00ff".encode("latin-1")), 400)["code"]
        == "invalid_json"
    )


def test_a_body_over_the_limit_is_413(gateway: Gateway) -> None:
    huge = {"model": "echo", "input": "x" * (17 * 1024 * 1024)}
    assert_error(post(gateway, huge), 413)
    assert gateway.stored_rows() == 0
    assert post(gateway, {"model": "echo", "input": "still serving"}).status_code == 200


def test_unknown_previous_response(gateway: Gateway) -> None:
    error = assert_error(
        post(gateway, {"model": "echo", "input": "x", "previous_response_id": "resp_x"}),
        400,
        "previous_response_id",
    )
    assert error == {
        "message": "Previous response with id 'resp_x' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }


def test_an_item_the_chat_wire_cannot_express_is_named(gateway: Gateway) -> None:
    searched = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    body = {"model": "chat-model", "input": [searched]}
    error = assert_error(post(gateway, body), 400, "input[0]")
    assert "web_search_call" in error["message"]
    assert gateway.fake.requests == [] and gateway.stored_rows() == 0


@pytest.mark.parametrize(
    ("upstream_status", "status", "code"),
    [
        (429, 429, "rate_limit_exceeded"),
        (500, 502, "upstream_error"),
        (503, 503, "upstream_unavailable"),
    ],
)
def test_upstream_http_failures(
    gateway: Gateway, upstream_status: int, status: int, code: str
) -> None:
    gateway.fake.script(Reply(status=upstream_status))
    error = assert_error(post(gateway, {"model": "chat-model", "input": "x"}), status)
    assert error["code"] == code
    assert gateway.stored_rows() == 0


def test_upstream_rejecting_the_gateway_key_is_502_and_never_leaks_it(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    leak = {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}"}}
    gateway.fake.script(Reply(status=401, error_body=leak))
    error = assert_error(post(gateway, {"model": "chat-model", "input": "x"}), 502)
    assert error["code"] == "upstream_auth_failed" and "credentials" in error["message"]
    gateway.fake.script(Reply(status=400, error_body=leak))
    error = assert_error(post(gateway, {"model": "chat-model", "input": "x"}), 400)
    assert "***" in error["message"]
    assert "upstream fake-chat answered HTTP 401" in caplog.text
    assert UPSTREAM_KEY not in caplog.text


def test_unknown_routes_and_methods(gateway: Gateway) -> None:
    assert_error(httpx.get(f"{gateway.url}/v1/nothing"), 404)
    assert_error(httpx.put(f"{gateway.url}/v1/responses"), 405)
    assert_error(httpx.get(f"{gateway.url}/v1/responses/resp_missing"), 404)
    bad_limit = httpx.get(f"{gateway.url}/v1/responses/resp_missing/input_items?limit=0")
    assert_error(bad_limit, 400, "limit")
    bad_order = httpx.get(f"{gateway.url}/v1/responses/r/input_items?order=sideways")
    assert_error(bad_order, 400, "order")


def test_unknown_model_without_default_provider_is_404(gateway: Gateway, tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:9", tmp_path / "x.db", default_provider=None)
    with serve(create_app(config)) as url:
        response = httpx.post(f"{url}/v1/responses", json={"model": "nope", "input": "x"})
        assert assert_error(response, 404, "model")["code"] == "model_not_found"


@pytest.fixture
def hanging_upstream() -> Iterator[str]:
    async def hang(request: Request) -> Response:
        import anyio

        await anyio.sleep(1.5)
        return Response("{}")

    with serve(Starlette(routes=[Route("/v1/chat/completions", hang, methods=["POST"])])) as url:
        yield url


@pytest.fixture
def refusing_upstream() -> Iterator[str]:
    with refusing_url() as url:
        yield url


def test_unreachable_and_slow_upstreams(
    tmp_path: Path, hanging_upstream: str, refusing_upstream: str
) -> None:
    config = gateway_config(refusing_upstream, tmp_path / "x.db")
    config.providers["slow"] = config.providers["fake-chat"].model_copy(
        update={"base_url": f"{hanging_upstream}/v1", "timeout_seconds": 0.2}
    )
    config.models["slow-model"] = config.models["chat-model"].model_copy(
        update={"provider": "slow"}
    )
    with serve(create_app(config)) as url:
        refused = httpx.post(f"{url}/v1/responses", json={"model": "chat-model", "input": "x"})
        assert assert_error(refused, 502)["code"] == "upstream_unreachable"
        slow = httpx.post(f"{url}/v1/responses", json={"model": "slow-model", "input": "x"})
        assert assert_error(slow, 504)["code"] == "upstream_timeout"
        streamed = httpx.post(
            f"{url}/v1/responses", json={"model": "slow-model", "input": "x", "stream": True}
        )
        assert assert_error(streamed, 504)["code"] == "upstream_timeout"


def test_a_full_upstream_pool_is_503_upstream_busy(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, url = fake_upstream
    config = gateway_config(url, tmp_path / "x.db")
    config.providers["fake-chat"] = config.providers["fake-chat"].model_copy(
        update={"max_connections": 1, "pool_timeout_seconds": 0.2}
    )
    fake.script(Reply(text="holding the only connection", delay=0.5))
    body = {"model": "chat-model", "input": "x", "stream": True}
    with serve(create_app(config)) as gateway_url:
        with httpx.stream("POST", f"{gateway_url}/v1/responses", json=body, timeout=30) as held:
            lines = held.iter_lines()
            next(lines)
            busy = httpx.post(
                f"{gateway_url}/v1/responses", json={"model": "chat-model", "input": "y"}
            )
            error = assert_error(busy, 503)
            assert error["code"] == "upstream_busy" and busy.headers["retry-after"] == "1"
            assert [line for line in lines if "response.completed" in line]
        again = httpx.post(
            f"{gateway_url}/v1/responses", json={"model": "chat-model", "input": "z"}
        )
        assert again.status_code == 200
