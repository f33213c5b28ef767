"""Turns sent with ``store: false`` count in usage, cost and the console, by project, key
and model, while nothing of what they said is written to the store."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from gateway import create_app, load_config

from .servers import run_cli as gateway
from .servers import serve
from .test_operator_cli import write_config

pytestmark = [pytest.mark.system]

MARKER = "zanzibarquokka"  # a word only the unstored turn says


def test_an_unstored_turn_counts_in_usage_once_and_keeps_none_of_its_words(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path, auth={"mode": "keys", "cache_seconds": 0, "admin_key": "sk-admin-0123456789"}
    )
    created = gateway("keys", "create", "--project", "team-a", "--config", config)
    assert created.returncode == 0, created.stderr
    secret, key_id = created.stdout.strip(), created.stderr.split()[1]
    headers = {"authorization": f"Bearer {secret}"}
    with serve(create_app(load_config(config))) as url:
        unstored = {"model": "echo", "input": f"say {MARKER} back", "store": False}
        unstored |= {"instructions": f"repeat {MARKER}"}
        answered = httpx.post(f"{url}/v1/responses", json=unstored, headers=headers)
        assert answered.status_code == 200, answered.text
        assert answered.json()["store"] is False
        unstored_tokens = answered.json()["usage"]
        streamed = httpx.post(
            f"{url}/v1/responses", json={**unstored, "stream": True}, headers=headers
        )
        assert streamed.status_code == 200, streamed.text
        [completed] = [
            json.loads(line.removeprefix("data: "))
            for line in streamed.text.splitlines()
            if line.startswith("data: ") and '"response.completed"' in line
        ]
        streamed_tokens = completed["response"]["usage"]
        stored = httpx.post(
            f"{url}/v1/responses", json={"model": "echo", "input": "plain words"}, headers=headers
        )
        assert stored.status_code == 200, stored.text
        stored_tokens = stored.json()["usage"]
        gone = httpx.get(f"{url}/v1/responses/{answered.json()['id']}", headers=headers)
        assert gone.status_code == 404
        console = httpx.get(
            f"{url}/v1/gateway/console/usage",
            headers={"authorization": "Bearer sk-admin-0123456789"},
            params={"by": "key"},
        )
    assert console.status_code == 200, console.text
    body = console.json()
    groups = {group["group"]: group for group in body["groups"]}
    totals = body["totals"]
    turns = (unstored_tokens, streamed_tokens, stored_tokens)
    expected_input = sum(tokens["input_tokens"] for tokens in turns)
    expected_output = sum(tokens["output_tokens"] for tokens in turns)
    assert (totals["requests"], totals["input_tokens"], totals["output_tokens"]) == (
        3,
        expected_input,
        expected_output,
    )
    assert list(groups) == [key_id] and groups[key_id]["requests"] == 3

    usage = gateway("usage", "--config", config)
    assert usage.returncode == 0, usage.stderr
    [header, row] = usage.stdout.splitlines()
    assert header.split()[:5] == ["PROJECT", "KEY", "MODEL", "RESPONSES", "INPUT"]
    assert row.split()[:6] == [
        "team-a",
        key_id,
        "echo",
        "3",
        str(expected_input),
        str(expected_output),
    ]

    for path in tmp_path.glob("s.db*"):
        assert MARKER.encode() not in path.read_bytes(), path.name
