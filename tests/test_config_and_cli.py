"""config.yaml loading, ${ENV} substitution, check-config and restarts on SQLite."""

from __future__ import annotations

import os
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
    assert "providers.p.base_url: required for wire_api 'chat_completions'" in text
    assert "sesion: unknown key" in text


def test_a_reference_to_an_unknown_provider_shows_beside_schema_errors() -> None:
    raw = {
        "server": {"port": "eighty", "host": "0.0.0.0"},
        "providers": {
            "p": {"wire_api": "responses", "base_url": "http://x/v1", "timeout_seconds": 0}
        },
        "models": {"m": {"provider": "ghost"}, "n": {"provider": "p", "context_window": 0}},
        "default_provider": "nowhere",
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    assert caught.value.problems == [
        "server.port: Input should be a valid integer, unable to parse string as an integer",
        "providers.p.timeout_seconds: Input should be greater than 0",
        "models.n.context_window: Input should be greater than or equal to 1",
        "models.m.provider: unknown provider 'ghost'",
        "default_provider: unknown provider 'nowhere'",
        "auth.mode: 'none' is allowed only on a loopback address, and server.host is '0.0.0.0'; "
        "set auth.mode: keys (with auth.keys or managed keys)",
    ]


def test_an_unset_variable_is_its_only_problem_and_paths_use_brackets() -> None:
    raw = {
        "auth": {
            "mode": "keys",
            "keys": [{"key": "short", "project": "a"}, {"key": "${K}", "project": "b"}],
        },
        "providers": {"p": {"wire_api": "chat_completions", "base_url": "${BASE}"}},
        "session": {"backend": "postgres", "postgres": {"dsn": "${DATABASE_URL}"}},
        "default_provider": "p",
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    assert caught.value.problems == [
        "auth.keys[1].key: environment variable K is not set",
        "providers.p.base_url: environment variable BASE is not set",
        "session.postgres.dsn: environment variable DATABASE_URL is not set",
        "auth.keys[0].key: String should have at least 16 characters",
    ]


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("api.example.com/v1", "must start with http:// or https://"),
        ("localhost:11434/v1", "must start with http:// or https://"),
        ("ftp://example.com", "must start with http:// or https://"),
        ("http:///v1", "has no host"),
        ("http://example.com:99999/v1", "has an invalid port"),
    ],
)
def test_a_base_url_is_an_http_url_with_a_host(base_url: str, problem: str) -> None:
    raw = {"providers": {"p": {"wire_api": "responses", "base_url": base_url}}}
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    assert caught.value.problems[0].startswith(f"providers.p.base_url: {problem}")
    for good in ("http://127.0.0.1:11434/v1", "https://api.openai.com/v1", "http://[::1]:8000"):
        raw = {"providers": {"p": {"wire_api": "responses", "base_url": good}}}
        assert parse_config(raw, env={}).providers["p"].base_url == good


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("mcp.example.com/tools/", "it does not start with http:// or https://"),
        ("https://mcp.example.com:99999/", "its port is not a number"),
        ("https://mcp.example.com/tools%2f", "its path holds an encoded"),
    ],
)
def test_an_allowed_mcp_server_is_a_url_that_can_be_matched(entry: str, problem: str) -> None:
    raw = {"mcp": {"allowed_servers": ["https://ok.example.com/mcp", entry]}}
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    assert caught.value.problems[0].startswith(
        f"mcp.allowed_servers: entry 1 ({entry!r}) cannot be matched: {problem}"
    ), caught.value.problems


@pytest.mark.parametrize("host", ["http://0.0.0.0", "0.0.0.0:8080", "[::1]", "", "a b"])
def test_server_host_is_an_address_or_a_name(host: str) -> None:
    with pytest.raises(ConfigError, match=r"server\.host: "):
        parse_config({"server": {"host": host}}, env={})
    for good in ("127.0.0.1", "::1", "localhost", "gateway.internal"):
        assert parse_config({"server": {"host": good}, "auth": {"mode": "keys"}}, env={})


def test_valid_sections_of_an_invalid_configuration_are_kept_for_the_machine_checks() -> None:
    raw = {"server": {"port": 1}, "session": {"sqlite": {"path": "/x/s.db"}}, "models": 3}
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, env={})
    assert caught.value.server is not None and caught.value.server.port == 1
    assert caught.value.session is not None and caught.value.session.sqlite.path == "/x/s.db"
    with pytest.raises(ConfigError) as broken:
        parse_config({"server": {"port": -1}}, env={})
    assert broken.value.server is None and broken.value.session is not None


def test_unknown_provider_references() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"models": {"m": {"provider": "ghost"}}, "default_provider": "ghost2"}, env={})
    assert "models.m.provider: unknown provider 'ghost'" in str(caught.value)
    assert "default_provider: unknown provider 'ghost2'" in str(caught.value)


MISSPELT = """\
server:
  host: 127.0.0.1
  prot: 8080
sesion:
  backend: sqlite
providers:
  echo:
    wire_api: echo
    base_ulr: http://127.0.0.1:1/v1
models:
  echo: {provider: echo, upstream_modle: x}
auth:
  mdoe: none
  zzzzzz: 1
"""


def test_a_misspelt_key_gets_a_suggestion_and_problems_come_in_file_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(MISSPELT)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert caught.value.problems == [
        "server.prot: unknown key (did you mean 'port'?)",
        "sesion: unknown key (did you mean 'session'?)",
        "providers.echo.base_ulr: unknown key (did you mean 'base_url'?)",
        "models.echo.upstream_modle: unknown key (did you mean 'upstream_model'?)",
        "auth.mdoe: unknown key (did you mean 'mode'?)",
        "auth.zzzzzz: unknown key",
    ]


def test_a_yaml_error_names_the_file_its_line_and_its_column(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("server:\n  host: [127.0.0.1\n  port: 8080\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert caught.value.problems == [
        f"{path}:3:7: not valid YAML: expected ',' or ']', but got ':'"
        " (while parsing a flow sequence at line 2, column 9)"
    ]
    path.write_text("server:\n\tport: 8080\n")
    with pytest.raises(ConfigError) as tabbed:
        load_config(path, env={})
    (problem,) = tabbed.value.problems
    assert problem.startswith(f"{path}:2:1: not valid YAML: found character '\\t'")
    assert "<unicode string>" not in problem
    path.write_text("server:\n  port: 8080\n  host: a\x00b\n")
    with pytest.raises(ConfigError) as special:
        load_config(path, env={})
    assert special.value.problems == [
        f"{path}:3:10: not valid YAML: special characters are not allowed (#x0000)"
    ]


@pytest.mark.system
def test_check_config_cli(tmp_path: Path) -> None:
    good = run_cli("check-config", "--config", str(REPO / "config.yaml"))
    assert good.returncode == 0, good.stderr
    assert "configuration OK" in good.stdout
    assert f"store: sqlite, {REPO / 'data' / 'sessions.db'}" in good.stdout
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
    misspelt = tmp_path / "misspelt.yaml"
    misspelt.write_text(MISSPELT)
    checked = run_cli("check-config", "--config", str(misspelt))
    assert checked.returncode == 2
    assert checked.stderr.splitlines()[1:3] == [
        "  server.prot: unknown key (did you mean 'port'?)",
        "  sesion: unknown key (did you mean 'session'?)",
    ]


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


def test_a_name_sent_to_the_default_provider_is_routed_once_and_few_are_kept() -> None:
    from gateway.config import DEFAULT_ROUTES_KEPT

    echo = {"wire_api": "echo"}
    config = parse_config({"providers": {"a": echo, "b": echo}, "default_provider": "a"}, env={})
    first = config.routes("some-model")
    assert config.routes("some-model") is first  # made once, not at every turn
    assert [(r.provider_name, r.upstream_model) for r in first] == [("a", "some-model")]
    other = config.model_copy(update={"default_provider": "b"})
    assert [r.provider_name for r in other.routes("some-model")] == ["b"]
    providers = {**config.providers, "a": config.providers["b"]}
    moved = config.model_copy(update={"providers": providers})
    assert moved.routes("some-model")[0].provider is providers["a"]
    for n in range(DEFAULT_ROUTES_KEPT + 10):  # names clients choose: the last few kept
        config.routes(f"name-{n}")
    assert len(config._default_routes) <= DEFAULT_ROUTES_KEPT
    last = f"name-{DEFAULT_ROUTES_KEPT + 9}"
    assert config.routes(last)[0].upstream_model == last


def test_workers_auto_is_a_worker_per_usable_core_and_one_on_the_memory_store() -> None:
    cores = len(os.sched_getaffinity(0))
    assert parse_config({"server": {"workers": "auto"}}, env={}).server.workers == cores
    memory = {"server": {"workers": "auto"}, "session": {"backend": "memory"}}
    assert parse_config(memory, env={}).server.workers == 1
    assert parse_config({"server": {"workers": 3}}, env={}).server.workers == 3
    with pytest.raises(ConfigError, match=r"server\.workers"):
        parse_config({"server": {"workers": "many"}}, env={})
