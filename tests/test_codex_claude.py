"""Codex CLI 0.169 through the gateway to Claude (``wire_api: anthropic``), against the
strict fake of the Messages API: a shell tool call with signed thinking, then resume."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .servers import serve, start_instance
from .test_codex_cli import codex, run_codex  # noqa: F401

pytestmark = [pytest.mark.system]


@pytest.fixture
def claude_gateway(tmp_path: Path) -> Iterator[tuple[Path, FakeAnthropic]]:
    fake = FakeAnthropic()
    with serve(fake.app) as upstream_url:
        config = tmp_path / "gateway.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
                    "providers": {
                        "claude": {
                            "wire_api": "anthropic",
                            "base_url": upstream_url,
                            "api_key": ANTHROPIC_KEY,
                        }
                    },
                    "models": {
                        "claude-model": {
                            "provider": "claude",
                            "upstream_model": "claude-sonnet-5-5",
                            "codex": {
                                "reasoning_levels": ["low", "medium"],
                                "default_reasoning_level": "low",
                            },
                        }
                    },
                }
            )
        )
        process, url = start_instance(config)
        home = tmp_path / "codex-home"
        home.mkdir()
        (home / "config.toml").write_text(
            'model = "claude-model"\n'
            'model_provider = "gateway"\n'
            'model_reasoning_effort = "low"\n'
            "[model_providers.gateway]\n"
            'name = "gateway"\n'
            f'base_url = "{url}/v1"\n'
            'wire_api = "responses"\n'
            "supports_websockets = true\n"
        )
        try:
            yield home, fake
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_discover(codex: str, claude_gateway: tuple[Path, FakeAnthropic]) -> None:  # noqa: F811
    home, fake = claude_gateway
    fake.script(AnthropicReply(text="Hi."))
    result = run_codex(codex, home, "--dangerously-bypass-approvals-and-sandbox", "Say hi.")
    Path("/tmp/cc/out.txt").write_text(result.stdout + "\n---\n" + result.stderr)
    Path("/tmp/cc/req.json").write_text(json.dumps(fake.requests, indent=1))
    assert result.returncode == 0
