"""``gateway keys``, ``gateway prune`` and ``gateway usage`` on a real SQLite file."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway import create_app, load_config

from .fake_upstream import FakeUpstream
from .servers import run_cli as gateway
from .servers import serve

pytestmark = [pytest.mark.system]


def write_config(tmp_path: Path, **sections: Any) -> str:
    config = {
        "auth": {"mode": "keys", "cache_seconds": 0},
        "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
        "providers": {"echo": {"wire_api": "echo"}},
        "default_provider": "echo",
        **sections,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_keys_are_created_listed_used_and_revoked(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    created = gateway("keys", "create", "--project", "team-a", "--name", "ci", "--config", config)
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("sk-gw-") and len(secret) > 40
    key_id = created.stderr.split()[1]
    assert key_id.startswith("key_") and "shown only once" in created.stderr
    listed = gateway("keys", "list", "--config", config)
    assert key_id in listed.stdout and "team-a" in listed.stdout and "active" in listed.stdout
    assert secret not in listed.stdout + listed.stderr
    other = gateway("keys", "list", "--project", "team-b", "--config", config)
    assert key_id not in other.stdout

    with serve(create_app(load_config(config))) as url:
        headers = {"authorization": f"Bearer {secret}"}
        body = {"model": "echo", "input": "hello"}
        assert httpx.post(f"{url}/v1/responses", json=body, headers=headers).status_code == 200
        revoked = gateway("keys", "revoke", key_id, "--config", config)
        assert revoked.returncode == 0 and f"revoked {key_id} (project team-a)" in revoked.stdout
        assert httpx.post(f"{url}/v1/responses", json=body, headers=headers).status_code == 401
    assert "revoked" in gateway("keys", "list", "--config", config).stdout
    missing = gateway("keys", "revoke", "key_nope", "--config", config)
    assert missing.returncode == 1 and "key_nope" in missing.stderr


def test_a_key_created_while_keys_are_not_checked_says_so(tmp_path: Path) -> None:
    config = write_config(tmp_path, auth={"mode": "none"})
    created = gateway("keys", "create", "--project", "team-a", "--config", config)
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("sk-gw-")
    assert created.stderr.splitlines()[-1] == (
        "gateway: warning: auth.mode is none: no API key is checked until auth.mode is keys"
        " (this key is kept, and works from then on)"
    )
    assert "team-a" in gateway("keys", "list", "--config", config).stdout
    checked = write_config(tmp_path)
    quiet = gateway("keys", "create", "--project", "team-a", "--config", checked)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_usage_and_prune_report_what_the_store_holds(tmp_path: Path) -> None:
    config = write_config(tmp_path, auth={"mode": "none"})
    with serve(create_app(load_config(config))) as url:
        for text in ("one two three", "four five"):
            answer = httpx.post(f"{url}/v1/responses", json={"model": "echo", "input": text})
            assert answer.status_code == 200
        kept = httpx.post(f"{url}/v1/conversations", json={"items": []}).json()["id"]
    usage = gateway("usage", "--since", "7d", "--config", config)
    assert usage.returncode == 0, usage.stderr
    header, row = usage.stdout.splitlines()
    assert header.split() == [
        "PROJECT", "KEY", "MODEL", "RESPONSES", "INPUT", "OUTPUT", "CACHED", "HIT_RATE",
        "REASONING", "COST_USD",
    ]  # fmt: skip
    assert row.split()[:4] == ["default", "-", "echo", "2"]
    assert int(row.split()[4]) > 0
    assert len(gateway("usage", "--project", "nobody", "--config", config).stdout.splitlines()) == 1

    with closing(sqlite3.connect(tmp_path / "s.db")) as conn, conn:
        conn.execute("UPDATE responses SET created_at = created_at - 40 * 86400")
    pruned = gateway("prune", "--older-than", "30d", "--config", config)
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.startswith("deleted 2 responses and 0 conversations last active before")
    again = gateway("prune", "--older-than", "30d", "--config", config)
    assert again.stdout.startswith("deleted 0 responses and 0 conversations")
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        assert conn.execute("SELECT id FROM conversations").fetchall() == [(kept,)]
    bad = gateway("prune", "--older-than", "soon", "--config", config)
    assert bad.returncode == 2 and "30d" in bad.stderr


def test_operator_commands_refuse_the_memory_backend(tmp_path: Path) -> None:
    config = write_config(tmp_path, session={"backend": "memory"})
    refused = gateway("keys", "list", "--config", config)
    assert refused.returncode == 2 and "memory backend" in refused.stderr


def test_an_open_gateway_must_bind_loopback(tmp_path: Path) -> None:
    exposed = write_config(tmp_path, auth={"mode": "none"}, server={"host": "0.0.0.0"})
    checked = gateway("check-config", "--config", exposed)
    assert checked.returncode == 2 and "auth.mode" in checked.stderr
    local = write_config(tmp_path, auth={"mode": "none"})
    served = gateway("serve", "--config", local, "--host", "0.0.0.0")
    assert served.returncode == 2 and "auth.mode" in served.stderr
    keyed = write_config(tmp_path, server={"host": "0.0.0.0"})
    assert gateway("check-config", "--config", keyed).returncode == 0


def test_a_managed_key_with_a_token_budget_is_stopped_once_it_is_used(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    create = ("keys", "create", "--project", "p", "--config", config, "--budget-tokens")
    refused = gateway(*create, "0")
    assert refused.returncode != 0 and "--budget-tokens must be at least 1" in refused.stderr
    created = gateway(*create, "3")
    assert created.returncode == 0, created.stderr
    secret, key_id = created.stdout.strip(), created.stderr.split()[1]
    listed = gateway("keys", "list", "--config", config).stdout
    assert "BUDGET_TOKENS" in listed.splitlines()[0]
    assert listed.splitlines()[1].split()[-1] == "3"

    with serve(create_app(load_config(config))) as url:
        headers = {"authorization": f"Bearer {secret}"}
        body = {"model": "echo", "input": "hello there, a few tokens"}
        answered = httpx.post(f"{url}/v1/responses", json=body, headers=headers)
        assert answered.status_code == 200
        assert answered.json()["usage"]["total_tokens"] > 3
        stopped = httpx.post(f"{url}/v1/responses", json=body, headers=headers)
    assert stopped.status_code == 429
    error = stopped.json()["error"]
    assert error["code"] == "insufficient_quota" and "budget of 3 tokens" in error["message"]
    assert key_id in listed


def test_usage_gives_each_rows_prompt_cache_hit_rate(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    """The fake provider reads 3 of each request's 11 input tokens from its cache."""
    _, upstream = fake_upstream
    provider = {"wire_api": "chat_completions", "base_url": f"{upstream}/v1", "api_key": "sk-x"}
    config = write_config(
        tmp_path,
        auth={"mode": "none"},
        providers={"fake": provider},
        default_provider="fake",
    )
    with serve(create_app(load_config(config))) as url:
        for text in ("one", "two"):
            answer = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": text})
            assert answer.status_code == 200, answer.text
    usage = gateway("usage", "--config", config)
    assert usage.returncode == 0, usage.stderr
    header, row = (line.split() for line in usage.stdout.splitlines())
    by_column = dict(zip(header, row, strict=True))
    assert (by_column["INPUT"], by_column["CACHED"]) == ("22", "6")
    assert by_column["HIT_RATE"] == "27.3%"
