"""Codex CLI 0.169 through the gateway over WebSocket: exec, resume, and compaction.

Codex comes from ``$GATEWAY_TEST_CODEX`` or from npm (``@openai/codex@0.169.0``, installed
once into the repository's ignored ``.cache/``); without either these tests are skipped.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from .fake_search import FakeSearch
from .fake_upstream import FakeUpstream, Reply
from .servers import REPO, serve, start_instance

pytestmark = [pytest.mark.system]

CODEX_VERSION = "0.169.0"
SUMMARY = "Summary: the user asked to remember the number 42."


@pytest.fixture(scope="session")
def codex(request: pytest.FixtureRequest) -> str:
    """Codex CLI: ``$GATEWAY_TEST_CODEX``, or installed with npm once into the repository's
    ignored ``.cache/``, saying so on the terminal (it may take a minute); skipped without npm."""
    given = os.environ.get("GATEWAY_TEST_CODEX")
    if given:
        return given
    cache = REPO / ".cache" / f"codex-{CODEX_VERSION}"
    binary = cache / "node_modules" / ".bin" / "codex"
    if binary.exists():
        return str(binary)
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(
            f"Codex CLI tests need npm to install Codex {CODEX_VERSION} (or GATEWAY_TEST_CODEX)"
        )
    cache.mkdir(parents=True, exist_ok=True)
    # Test workers may ask at once: one installs, the others wait for it.
    with (cache.parent / f"codex-{CODEX_VERSION}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            tell(request, f"installing Codex CLI {CODEX_VERSION} with npm into {cache} (once)")
            package = f"@openai/codex@{CODEX_VERSION}"
            command = [npm, "install", "--no-audit", "--no-fund", "--silent", package]
            by_hand = f"run `cd {cache} && npm install {package}` once, or set GATEWAY_TEST_CODEX"
            try:  # within the test's own 120 s timeout, which counts this fixture
                installed = subprocess.run(
                    command, cwd=cache, timeout=90, capture_output=True, text=True
                )
            except subprocess.TimeoutExpired:
                pytest.fail(f"npm install {package} took more than 90 s: {by_hand}")
            if installed.returncode != 0:
                pytest.fail(
                    f"npm install {package} failed ({by_hand}):\n{installed.stderr[-2000:]}"
                )
    return str(binary)


def tell(request: pytest.FixtureRequest, message: str) -> None:
    """Write ``message`` on the terminal now, past pytest's capture (from a worker too)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n[tests] {message}", file=sys.stderr, flush=True)


@contextmanager
def gateway_for_codex(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    codex_search: str = "disabled",
    **settings: Any,
) -> Iterator[tuple[str, Path, FakeUpstream]]:
    """A gateway process for a chat model and a Codex home pointed at it."""
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
                **settings,
            }
        )
    )
    process, url = start_instance(config)
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "chat-model"\n'
        'model_provider = "gateway"\n'
        f'web_search = "{codex_search}"\n'
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


@pytest.fixture
def codex_gateway(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> Iterator[tuple[str, Path, FakeUpstream]]:
    # No search backend: web search is off, as no one runs it for this model.
    with gateway_for_codex(fake_upstream, tmp_path) as made:
        yield made


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


@pytest.mark.parametrize("mode", ["live", "cached"])
def test_codex_searches_the_web_through_the_gateway_on_a_chat_model(
    codex: str, fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, mode: str
) -> None:
    searxng = FakeSearch("searxng")
    with serve(searxng.app) as search_url:
        settings = {"web_search": {"backends": [{"kind": "searxng", "url": search_url}]}}
        with gateway_for_codex(fake_upstream, tmp_path, mode, **settings) as (_, home, fake):
            arguments = '{"query": "paris weather"}'
            fake.script(
                Reply(tool_calls=[("c1", "web_search", arguments)], finish_reason="tool_calls"),
                Reply(text="Sunny in Paris, 21 C [1]."),
            )
            ran = run_codex(codex, home, "What is the weather in Paris? Search the web.")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "Sunny in Paris, 21 C [1]." in ran.stdout
    assert [r["params"]["q"] for r in searxng.requests] == ["paris weather"]
    first, second = fake.requests[-2:]
    assert "web_search" in [t["function"]["name"] for t in first["tools"]]
    (result,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert "Paris weather" in result["content"]
