"""Codex CLI 0.169 through the gateway over WebSocket: exec, resume, and compaction.

Codex comes from npm (``@openai/codex@0.169.0``, cached under ``~/.cache``) or from
``$GATEWAY_TEST_CODEX``; without either, and without npm, these tests are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .fake_upstream import FakeUpstream, Reply
from .servers import start_instance

pytestmark = [pytest.mark.system]

CODEX_VERSION = "0.169.0"
SUMMARY = "Summary: the user asked to remember the number 42."


@pytest.fixture(scope="session")
def codex() -> str:
    given = os.environ.get("GATEWAY_TEST_CODEX")
    if given:
        return given
    cache = Path.home() / ".cache" / "gateway-tests" / f"codex-{CODEX_VERSION}"
    binary = cache / "node_modules" / ".bin" / "codex"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("Codex CLI tests need npm (or GATEWAY_TEST_CODEX)")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                f"@openai/codex@{CODEX_VERSION}",
            ],
            cwd=cache,
            check=True,
            timeout=600,
            capture_output=True,
        )
    return str(binary)


@pytest.fixture
def codex_gateway(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> Iterator[tuple[str, Path, FakeUpstream]]:
    fake, upstream_url = fake_upstream
    config = tmp_path / "gateway.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
                "providers": {
                    "fake": {"wire_api": "chat_completions", "base_url": f"{upstream_url}/v1"}
                },
                "models": {"chat-model": {"provider": "fake"}},
            }
        )
    )
    process, url = start_instance(config)
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "chat-model"\n'
        'model_provider = "gateway"\n'
        "[model_providers.gateway]\n"
        'name = "gateway"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        "supports_websockets = true\n"
    )
    try:
        yield url, home, fake
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_codex(codex: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    work = home.parent / "work"
    work.mkdir(exist_ok=True)
    env = {**os.environ, "CODEX_HOME": str(home)}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [codex, "exec", "--skip-git-repo-check", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def user_texts(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"] if m["role"] == "user")


def test_codex_exec_and_resume_over_websocket(
    codex: str, codex_gateway: tuple[str, Path, FakeUpstream]
) -> None:
    _, home, fake = codex_gateway
    fake.script(Reply(text="I will remember 42."), Reply(text="The number was 42."))
    first = run_codex(codex, home, "Remember the number 42.")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "I will remember 42." in first.stdout
    assert "Remember the number 42." in user_texts(fake.last)

    resumed = run_codex(codex, home, "resume", "--last", "Which number was it?")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "The number was 42." in resumed.stdout
    sent = fake.last["messages"]
    assert "Remember the number 42." in user_texts(fake.last)
    assert any(m["role"] == "assistant" and m.get("content") == "I will remember 42." for m in sent)
    log = next(home.parent.glob("gateway-*.log")).read_text()
    assert '"WebSocket /v1/responses" [accepted]' in log  # the upgrade, not HTTP
    assert "POST /v1/responses" not in log


def test_codex_compacts_and_keeps_going(
    codex: str, codex_gateway: tuple[str, Path, FakeUpstream]
) -> None:
    _, home, fake = codex_gateway
    fake.script(Reply(text="I will remember 42."))
    assert run_codex(codex, home, "Remember the number 42.").returncode == 0
    fake.script(Reply(text=SUMMARY), Reply(text="Still 42."))
    resumed = run_codex(
        codex, home, "-c", "model_auto_compact_token_limit=10", "resume", "--last", "Which?"
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "Still 42." in resumed.stdout
    after = fake.last
    assert SUMMARY in user_texts(after)  # the summary stands in for the old turns
    assert not any(m.get("content") == "I will remember 42." for m in after["messages"])
