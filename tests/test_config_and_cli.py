"""config.yaml loading, ${ENV} substitution, check-config and restarts on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from openai import OpenAI

from gateway import ConfigError, create_app, load_config, parse_config

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .servers import REPO, run_cli, serve

pytestmark = [pytest.mark.unit]


def test_the_shipped_config_is_offline_sqlite_with_echo() -> None:
    config = load_config(REPO / "config.yaml", env={})
    assert config.session.backend == "sqlite"
    assert config.session.sqlite.path == "./data/sessions.db"
    route = config.route("echo")
    assert route is not None and route.provider.wire_api == "echo"


def test_environment_variables_are_substituted() -> None:
    raw = {
        "providers": {
            "p": {
                "wire_api": "chat_completions",
                "base_url": "${BASE:-http://x/v1}",
                "api_key": "${KEY}",
            }
        },
        "default_provider": "p",
    }
    config = parse_config(raw, env={"KEY": "secret"})
    assert config.providers["p"].api_key == "secret"
    assert config.providers["p"].base_url == "http://x/v1"


def test_every_problem_is_reported_with_its_key_path() -> None:
    raw = {
        "server": {"port": "eighty"},
        "providers": {"p": {"wire_api": "chat_completions", "api_key": "${MISSING_KEY}"}},
        "models": {"m": {"provider": "p"}},
        "sesion": {},
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    text = "\n".join(caught.value.problems)
    assert "providers.p.api_key: environment variable MISSING_KEY is not set" in text
    assert "server.port" in text
    assert "providers.p" in text and "base_url is required" in text
    assert "sesion" in text


def test_unknown_provider_references() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"models": {"m": {"provider": "ghost"}}, "default_provider": "ghost2"}, env={})
    assert "models.m.provider: unknown provider 'ghost'" in str(caught.value)
    assert "default_provider: unknown provider 'ghost2'" in str(caught.value)


@pytest.mark.system
def test_check_config_cli(tmp_path: Path) -> None:
    good = run_cli("check-config", "--config", str(REPO / "config.yaml"))
    assert good.returncode == 0, good.stderr
    assert "configuration OK" in good.stdout
    bad_file = tmp_path / "bad.yaml"
    bad_file.write_text("providers:\n  x: {wire_api: responses, api_key: '${NOPE_NOT_SET}'}\n")
    bad = run_cli("check-config", "--config", str(bad_file))
    assert bad.returncode == 2
    assert "providers.x.api_key: environment variable NOPE_NOT_SET is not set" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = run_cli("serve", "--config", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert "Traceback" not in missing.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("server: [unclosed\n")
    assert "not valid YAML" in run_cli("check-config", "--config", str(broken)).stderr


@pytest.mark.api
def test_chains_survive_a_restart_on_sqlite(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, upstream_url = fake_upstream
    config = gateway_config(upstream_url, tmp_path / "restart.db")

    def client(url: str) -> OpenAI:
        return OpenAI(base_url=f"{url}/v1", api_key="k", _strict_response_validation=True)

    with serve(create_app(config)) as url, client(url) as openai:
        first = openai.responses.create(model="chat-model", input="before restart")
    with serve(create_app(config)) as url, client(url) as openai:
        second = openai.responses.create(
            model="chat-model", input="after restart", previous_response_id=first.id
        )
        assert client(url).responses.retrieve(first.id).output_text == "reply to: before restart"
    assert second.previous_response_id == first.id
    contents = [m["content"] for m in fake.last["messages"]]
    assert contents == ["before restart", "reply to: before restart", "after restart"]
