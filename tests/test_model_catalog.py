"""``GET /v1/models``: OpenAI's list, or with ``client_version`` the catalog Codex reads."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gateway import create_app

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve

pytestmark = [pytest.mark.api]

# The fields of Codex's ModelInfo (codex-rs/protocol/src/openai_models.rs) without a default.
CODEX_REQUIRED = {
    "slug",
    "display_name",
    "supported_reasoning_levels",
    "shell_type",
    "visibility",
    "supported_in_api",
    "priority",
    "base_instructions",
    "supports_reasoning_summaries",
    "support_verbosity",
    "truncation_policy",
    "supports_parallel_tool_calls",
    "experimental_supported_tools",
}


def test_codex_gets_its_catalog_from_the_config(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    models = {
        "coder": {
            "provider": "fake-chat",
            "upstream_model": "deepseek-chat",
            "context_window": 64000,
            "codex": {
                "display_name": "DeepSeek coder",
                "reasoning_levels": ["low", "medium", "high"],
                "default_reasoning_level": "medium",
                "apply_patch_tool_type": "function",
                "base_instructions": "You are a careful coding agent.",
            },
        },
        "plain": {"provider": "echo"},
    }
    config = gateway_config(fake_upstream[1], tmp_path / "c.db", models=models)
    with serve(create_app(config)) as url:
        catalog = httpx.get(f"{url}/v1/models", params={"client_version": "0.169.0"}).json()
        listed = httpx.get(f"{url}/v1/models").json()
    assert listed["object"] == "list" and [m["id"] for m in listed["data"]] == ["coder", "plain"]
    coder, plain = catalog["models"]
    assert set(coder) >= CODEX_REQUIRED and set(plain) >= CODEX_REQUIRED
    assert coder["slug"] == "coder" and coder["display_name"] == "DeepSeek coder"
    assert coder["context_window"] == 64000 and coder["default_reasoning_level"] == "medium"
    assert [level["effort"] for level in coder["supported_reasoning_levels"]] == [
        "low",
        "medium",
        "high",
    ]
    assert coder["apply_patch_tool_type"] == "function"
    assert coder["base_instructions"] == "You are a careful coding agent."
    assert plain["display_name"] == "plain" and plain["supported_reasoning_levels"] == []
    assert plain["shell_type"] == "shell_command" and plain["visibility"] == "list"
