"""The README's example runs as printed against the gateway on the shipped config."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gateway import create_app, load_config

from .servers import free_port, serve

REPO = Path(__file__).resolve().parent.parent


def blocks(language: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_readme_opens_with_the_two_commands() -> None:
    run, test = blocks("sh")[:2]
    assert "gateway serve" in run
    assert "pytest" in test
    ci = (REPO / ".ci" / "run").read_text()
    assert test.strip() in ci


def test_the_curl_example_prints_what_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the shipped config keeps its database under ./data
    config = load_config(REPO / "config.yaml", env={})
    port = free_port()
    example = next(b for b in blocks("sh") if "previous_response_id" in b)
    expected = blocks("text")[0].strip()
    with serve(create_app(config), port=port):
        script = example.replace("localhost:8080", f"127.0.0.1:{port}")
        result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected
    assert (tmp_path / "data" / "sessions.db").exists()
