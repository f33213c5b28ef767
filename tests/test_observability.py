"""Metrics, request ids and access logs, after known sequences of requests."""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from gateway import create_app
from gateway.observability.request_log import (
    CURRENT_REQUEST,
    AccessLine,
    RequestIdFilter,
    RequestLog,
    TextFormatter,
)

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve, start_instance

pytestmark = [pytest.mark.api]

ADMIN_KEY = "admin-key-0123456789abcdef"
CLIENT_KEY = "client-key-0123456789abcdef"


def scrape(url: str, key: str | None = None) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    response = httpx.get(f"{url}/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_counters_after_a_known_sequence(gateway: Gateway) -> None:
    url, fake = gateway.url, gateway.fake
    first = httpx.post(f"{url}/v1/responses", json={"model": "chat-model", "input": "one"})
    second = httpx.post(
        f"{url}/v1/responses",
        json={"model": "chat-model", "input": "two", "previous_response_id": first.json()["id"]},
    )
    with httpx.stream(
        "POST",
        f"{url}/v1/responses",
        json={
            "model": "chat-model",
            "input": "three",
            "stream": True,
            "previous_response_id": second.json()["id"],
        },
    ) as streamed:
        assert streamed.status_code == 200
        streamed.read()
    fake.script(Reply(status=500, error_body={"error": {"message": "down"}}))
    failed = httpx.post(f"{url}/v1/responses", json={"model": "chat-model", "input": "four"})
    assert failed.status_code == 502
    assert httpx.get(f"{url}/v1/responses/resp_missing").status_code == 404
    assert httpx.get(f"{url}/nowhere").status_code == 404

    samples = scrape(url)
    requests = "gateway_requests_total"
    post = {"route": "/v1/responses", "method": "POST"}
    assert value(samples, requests, **post, status="200") == 3
    assert value(samples, requests, **post, status="502") == 1
    assert value(samples, requests, route="/v1/responses/{id}", method="GET", status="404") == 1
    assert value(samples, requests, route="unmatched", method="GET", status="404") == 1
    assert value(samples, "gateway_request_duration_seconds_count", **post) == 4
    upstream = {"provider": "fake-chat", "model": "chat-model"}
    assert value(samples, "gateway_upstream_duration_seconds_count", **upstream) == 3
    assert value(samples, "gateway_upstream_time_to_first_token_seconds_count", **upstream) == 3
    assert value(samples, "gateway_upstream_errors_total", **upstream, code="http_500") == 1
    tokens = {"project": "default", "model": "chat-model"}
    assert value(samples, "gateway_tokens_total", **tokens, kind="input") == 3 * 11
    assert value(samples, "gateway_tokens_total", **tokens, kind="output") == 3 * 7
    assert value(samples, "gateway_tokens_total", **tokens, kind="cached") == 3 * 3
    assert value(samples, "gateway_tokens_total", **tokens, kind="reasoning") == 3 * 2
    assert value(samples, "gateway_chain_depth_count") == 2
    assert value(samples, "gateway_chain_depth_sum") == 1 + 2
    assert value(samples, "gateway_store_operation_duration_seconds_count", operation="save") == 4
    assert value(samples, "gateway_store_operation_duration_seconds_count", operation="get") == 1
    assert value(samples, "gateway_store_errors_total", operation="get", code="x") == 0
    assert value(samples, "gateway_active_streams") == 0


def test_every_response_carries_a_request_id(gateway: Gateway) -> None:
    url = gateway.url
    generated = httpx.get(f"{url}/healthz").headers["x-request-id"]
    assert generated.startswith("req_") and len(generated) == 36
    assert httpx.get(f"{url}/healthz").headers["x-request-id"] != generated
    mine = httpx.get(f"{url}/v1/responses/nope", headers={"x-request-id": "trace-42"})
    assert mine.status_code == 404 and mine.headers["x-request-id"] == "trace-42"
    odd = httpx.get(f"{url}/healthz", headers={"x-request-id": "a b\tc" + "x" * 200})
    assert odd.headers["x-request-id"].startswith("req_")


@pytest.mark.unit
def test_log_records_carry_the_current_request_id() -> None:
    id_filter = RequestIdFilter()
    record = logging.LogRecord("gateway", logging.INFO, __file__, 1, "outside", None, None)
    id_filter.filter(record)
    assert record.request_id == "-"  # type: ignore[attr-defined]
    token = CURRENT_REQUEST.set(RequestLog("req_abc"))
    try:
        id_filter.filter(record)
    finally:
        CURRENT_REQUEST.reset(token)
    assert record.request_id == "req_abc"  # type: ignore[attr-defined]


@pytest.mark.unit
def test_text_lines_read_as_the_format_says_exceptions_included() -> None:
    formatter = TextFormatter()
    log = RequestLog("req_abc", project="p", model="m", usage={"input_tokens": 5})
    line = AccessLine("127.0.0.1", "POST", "/v1/responses", 200, 0.01234, log)
    record = logging.LogRecord("gateway.access", logging.INFO, __file__, 1, line, None, None)
    record.request_id = "req_abc"
    text = formatter.format(record)
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO gateway\.access \[req_abc\] "
        r'127\.0\.0\.1 "POST /v1/responses" 200 12\.3ms project=p model=m input_tokens=5',
        text,
    ), text
    try:
        raise ValueError("boom")
    except ValueError:
        failure = logging.LogRecord(
            "gateway", logging.ERROR, __file__, 1, "failed %s", ("x",), sys.exc_info()
        )
    RequestIdFilter().filter(failure)
    lines = formatter.format(failure).splitlines()
    assert lines[0].endswith("ERROR gateway [-] failed x")
    assert lines[-1] == "ValueError: boom"


def test_metrics_need_the_admin_key_when_keys_are_on(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    auth = {
        "mode": "keys",
        "admin_key": ADMIN_KEY,
        "keys": [{"key": CLIENT_KEY, "project": "p"}],
    }
    config = gateway_config(fake_upstream[1], tmp_path / "m.db", auth=auth)
    with serve(create_app(config)) as url:
        assert httpx.get(f"{url}/metrics").status_code == 401
        client = {"authorization": f"Bearer {CLIENT_KEY}"}
        assert httpx.get(f"{url}/metrics", headers=client).status_code == 401
        body = {"model": "chat-model", "input": "hi"}
        assert httpx.post(f"{url}/v1/responses", json=body, headers=client).status_code == 200
        samples = scrape(url, ADMIN_KEY)
    tokens = {"project": "p", "model": "chat-model", "kind": "input"}
    assert value(samples, "gateway_tokens_total", **tokens) == 11


def write_config(tmp_path: Path, upstream_url: str, **server: Any) -> Path:
    config = {
        "server": {"log_format": "json", **server},
        "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
        "providers": {
            "fake": {"wire_api": "chat_completions", "base_url": f"{upstream_url}/v1"},
        },
        "models": {"chat-model": {"provider": "fake"}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def stop(process: Any) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


@pytest.mark.system
def test_json_access_logs_carry_id_project_model_tokens_and_never_the_prompt(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    process, url = start_instance(write_config(tmp_path, fake_upstream[1]))
    try:
        body = {"model": "chat-model", "input": "a very private prompt"}
        answer = httpx.post(
            f"{url}/v1/responses",
            json=body,
            headers={"x-request-id": "trace-7", "authorization": "Bearer sk-client-secret"},
        )
        assert answer.status_code == 200
    finally:
        stop(process)
    text = next(tmp_path.glob("gateway-*.log")).read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert lines and len(lines) == len(text.splitlines())  # every line is JSON
    access = next(line for line in lines if line.get("request_id") == "trace-7")
    assert access["logger"] == "gateway.access"
    assert access["status"] == 200 and access["path"] == "/v1/responses"
    assert access["project"] == "default" and access["model"] == "chat-model"
    assert access["input_tokens"] == 11 and access["output_tokens"] == 7
    assert access["upstream_ms"] > 0 and access["duration_ms"] >= access["upstream_ms"]
    assert "private prompt" not in text and "sk-client-secret" not in text


@pytest.mark.parametrize("workers", [2])
@pytest.mark.system
def test_workers_report_one_sum(
    workers: int, fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    config = write_config(tmp_path, fake_upstream[1], workers=workers)
    process, url = start_instance(config)
    try:
        for _ in range(20):  # new connections, spread over the workers by the kernel
            body = {"model": "chat-model", "input": "hi"}
            assert httpx.post(f"{url}/v1/responses", json=body).status_code == 200
        for _ in range(3):  # whichever worker answers, it reports all of them
            samples = scrape(url)
            route = {"route": "/v1/responses", "method": "POST", "status": "200"}
            assert value(samples, "gateway_requests_total", **route) == 20
            tokens = {"project": "default", "model": "chat-model", "kind": "input"}
            assert value(samples, "gateway_tokens_total", **tokens) == 20 * 11
    finally:
        stop(process)
