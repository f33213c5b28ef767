"""The README's commands and first chain work as printed, with the gateway its command starts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.config import load_config

from .markdown_examples import REPO, Example, examples
from .servers import LISTENING

pytestmark = [pytest.mark.system]

README = examples(REPO / "README.md")


def blocks(language: str) -> list[Example]:
    return [example for example in README if example.language == language]


@pytest.mark.unit
def test_readme_opens_with_the_two_commands() -> None:
    run, test = README[:2]
    assert run.language == test.language == "sh"
    assert "gateway serve" in run.code
    assert "pytest" in test.code
    ci = (REPO / ".ci" / "run").read_text()
    assert test.code.strip() in ci


@pytest.fixture
def started_as_printed(tmp_path: Path) -> Iterator[int]:
    """The README's start command, after its install, run in a folder holding the shipped
    config on a port the OS chooses; yields the port once the gateway answers."""
    start = README[0].code.strip().split("&&")[-1].strip()
    assert start == ".venv/bin/gateway serve"
    config = (REPO / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(re.sub(r"port: 8080", "port: 0", config))
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    log = (tmp_path / "gateway.log").open("wb")
    process = subprocess.Popen(
        shlex.split(start), cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 30
        while not (listening := LISTENING.search((tmp_path / "gateway.log").read_text())):
            assert process.poll() is None, (tmp_path / "gateway.log").read_text()
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.05)
        port = int(listening.group(1))
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def run_against(example: Example, port: int, folder: Path) -> str:
    code = example.code.replace("localhost:8080", f"127.0.0.1:{port}")
    command = ["bash", "-c", code] if example.language == "sh" else [sys.executable, "-c", code]
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    result = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_first_chain_prints_what_the_readme_says(
    started_as_printed: int, tmp_path: Path
) -> None:
    curl = next(b for b in blocks("sh") if "previous_response_id" in b.code)
    assert curl.prints is not None
    assert run_against(curl, started_as_printed, tmp_path) == curl.prints.strip()
    sdk = next(b for b in blocks("python") if "previous_response_id" in b.code)
    assert run_against(sdk, started_as_printed, tmp_path) == curl.prints.strip()
    assert (tmp_path / "data" / "sessions.db").exists()


def test_a_model_the_shipped_config_does_not_list_is_not_found(
    started_as_printed: int, tmp_path: Path
) -> None:
    unlisted = next(b for b in blocks("sh") if '"gpt-4o"' in b.code)
    assert unlisted.prints is not None
    assert run_against(unlisted, started_as_printed, tmp_path) == unlisted.prints.strip()
    answer = httpx.post(
        f"http://127.0.0.1:{started_as_printed}/v1/responses",
        json={"model": "ehco", "input": "a typo"},
        timeout=10,
    )
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "model_not_found"


@pytest.mark.unit
def test_the_shipped_config_routes_only_the_models_it_names() -> None:
    config = load_config(REPO / "config.yaml", env={})
    assert config.default_provider is None
    assert config.route("echo") is not None
    assert config.route("gpt-4o") is None
