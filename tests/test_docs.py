"""The README and docs/ tell the truth: their examples run, their keys and links exist."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import httpx
import pytest
import yaml
from pydantic import BaseModel

from gateway import create_app
from gateway.config import GatewayConfig, load_config, parse_config

from .markdown_examples import REPO, Example, anchors, code_spans, examples, links, markdown_files
from .servers import loopback_socket, serve
from .test_codex_cli import codex, run_codex  # noqa: F401
from .test_layers import LAYERS

pytestmark = [pytest.mark.unit]

ALL_EXAMPLES = [example for path in markdown_files() for example in examples(path)]
RUNNABLE = ("sh", "bash", "python")
SHIPPED_PORT = re.compile(r"\b(localhost|127\.0\.0\.1):8080\b")
IN_ORDER = sorted({e.in_order for e in ALL_EXAMPLES if e.in_order and e.language in RUNNABLE})
# What differs from one run to the next in an answer: times, generated ids, cursors.
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
_GENERATED_ID = re.compile(r"^(conv|msg)_[0-9a-f]{48}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def by_language(*languages: str) -> list[Any]:
    """The examples that run on their own (not under ``<!-- in order -->``)."""
    return [
        pytest.param(example, id=example.name)
        for example in ALL_EXAMPLES
        if example.language in languages and example.runs and example.in_order is None
    ]


@contextmanager
def shipped_gateway(folder: Path) -> Iterator[int]:
    """The shipped config, written into ``folder`` for a port the OS chose, served; its port."""
    sock = loopback_socket()
    port: int = sock.getsockname()[1]
    raw = yaml.safe_load((REPO / "config.yaml").read_text())
    raw["server"]["port"] = port
    raw["session"]["sqlite"]["path"] = str(folder / "data" / "sessions.db")
    (folder / "config.yaml").write_text(yaml.safe_dump(raw))
    (folder / ".venv").symlink_to(REPO / ".venv")
    with serve(create_app(load_config(folder / "config.yaml", env={})), sock):
        yield port


@pytest.fixture(scope="module")
def gateway_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A folder holding the shipped config on a port the OS chose, with its gateway serving."""
    folder = tmp_path_factory.mktemp("docs")
    with shipped_gateway(folder) as port:
        yield folder, port


def run_example(example: Example, folder: Path, port: int) -> subprocess.CompletedProcess[str]:
    code = SHIPPED_PORT.sub(f"127.0.0.1:{port}", example.code)
    command = ["bash", "-c", code] if example.language != "python" else [sys.executable, "-c", code]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_PROXY": "127.0.0.1,localhost",
        "GATEWAY_CONFIG": str(folder / "config.yaml"),
    }
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=90, check=False
    )


def comparable(value: Any, key: str = "") -> Any:
    """``value`` with what differs between runs (times, generated ids, cursors) blanked."""
    if isinstance(value, dict):
        return {name: comparable(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, str):
        for pattern, blank in ((_TIME, "<time>"), (_GENERATED_ID, "<id>"), (_UUID, "<uuid>")):
            if pattern.match(value):
                return blank
        if key == "nextCursor":
            return "<cursor>"
    return value


def assert_shown(example: Example, result: subprocess.CompletedProcess[str]) -> None:
    """The example ran, printing what its page says it prints or answers."""
    assert result.returncode == 0, f"{example.name}\n{result.stdout}\n{result.stderr}"
    if example.prints is not None:
        assert result.stdout.strip() == example.prints.strip(), example.name
    if example.answers is not None:
        answered = comparable(json.loads(result.stdout))
        assert answered == comparable(json.loads(example.answers)), example.name


@pytest.mark.parametrize("example", by_language(*RUNNABLE))
@pytest.mark.system
def test_the_example_runs(example: Example, gateway_dir: tuple[Path, int]) -> None:
    assert_shown(example, run_example(example, *gateway_dir))


@pytest.mark.parametrize("name", IN_ORDER)
@pytest.mark.system
def test_the_examples_run_in_order(name: str, tmp_path: Path) -> None:
    ordered = [e for e in ALL_EXAMPLES if e.in_order == name and e.language in RUNNABLE]
    assert len(ordered) > 1
    with shipped_gateway(tmp_path) as port:
        for example in ordered:
            assert_shown(example, run_example(example, tmp_path, port))


def test_the_comparison_blanks_only_what_differs_between_runs() -> None:
    first = {"createdAt": "2026-01-02T03:04:05.678Z", "nextCursor": "eyJ.a", "seq": "1"}
    again = {"createdAt": "2026-01-02T03:04:06.001Z", "nextCursor": "eyJ.b", "seq": "1"}
    assert comparable(first) == comparable(again)
    assert comparable({"seq": "1"}) != comparable({"seq": "2"})
    assert comparable({"nextCursor": None}) != comparable({"nextCursor": "eyJ.a"})


@pytest.mark.parametrize("example", by_language("yaml"))
def test_the_configuration_example_is_valid(example: Example) -> None:
    raw = yaml.safe_load(example.code)
    variables = re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", example.code)
    parse_config(raw, env={name: f"value-of-{name.lower()}-for-docs" for name in variables})


def test_few_examples_are_not_run() -> None:
    skipped = [e.name for e in ALL_EXAMPLES if e.language in RUNNABLE and not e.runs]
    runnable = [e for e in ALL_EXAMPLES if e.language in RUNNABLE]
    assert len(skipped) * 2 < len(runnable), skipped


def key_paths(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every leaf key of ``model``: ``NAME`` for a mapping's keys, ``[]`` for a list's items."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        yield from _leaves(field.annotation, path)


def _leaves(annotation: Any, path: str) -> Iterator[str]:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        models = [arg for arg in args if arg is not type(None)]
        yield from _leaves(models[0] if len(models) == 1 else Any, path)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from key_paths(annotation, f"{path}.")
    elif origin is dict and _is_model(args[1]):
        yield from key_paths(args[1], f"{path}.NAME.")
    elif origin is list and _is_model(args[0]):
        yield from key_paths(args[0], f"{path}[].")
    else:
        yield path


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def test_the_key_walk_reaches_nested_sections() -> None:
    paths = set(key_paths(GatewayConfig))
    for expected in (
        "server.port",
        "auth.keys[].requests_per_minute",
        "session.sqlite.busy_timeout_ms",
        "session.postgres.dsn",
        "providers.NAME.wire_api",
        "models.NAME.codex.shell_type",
        "compaction.secret",
        "default_provider",
    ):
        assert expected in paths


def test_every_configuration_key_is_documented() -> None:
    documented = code_spans(REPO / "docs" / "configuration.md")
    missing = []
    for path in key_paths(GatewayConfig):
        pattern = re.escape(path).replace("NAME", "[A-Z]+")
        if not any(re.fullmatch(pattern, span) for span in documented):
            missing.append(path)
    assert not missing, f"docs/configuration.md does not name {missing}"


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        destination = (page.parent / file).resolve() if file else page
        leads_there = destination.exists() and (
            not anchor or (destination.suffix == ".md" and anchor in anchors(destination))
        )
        if not leads_there:
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_the_architecture_names_files_that_exist() -> None:
    named = [
        span
        for span in code_spans(REPO / "docs" / "architecture.md")
        if re.match(r"(gateway|session)/", span)
    ]
    assert named
    assert [path for path in named if not (REPO / path).exists()] == []


def _defines(path: Path, name: str) -> bool:
    """Whether the module at ``path`` defines ``name`` at its top (or a class of it does)."""
    for node in ast.walk(ast.parse(path.read_text())):
        kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        if isinstance(node, kinds) and node.name == name:
            return True
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def test_each_step_of_extending_names_what_exists() -> None:
    """``path:Name`` spans in docs/extending.md: the file exists and defines the name."""
    spans = code_spans(REPO / "docs" / "extending.md")
    named = [s for s in spans if re.fullmatch(r"(gateway|session|tests)/[\w/]+\.py(:\w+)?", s)]
    assert len(named) > 20
    missing = [
        span
        for span in named
        if not (REPO / span.partition(":")[0]).exists()
        or (":" in span and not _defines(REPO / span.partition(":")[0], span.partition(":")[2]))
    ]
    assert missing == []


def test_the_architecture_has_the_layers_the_layer_test_keeps() -> None:
    """The table's layers and the order the text gives are ``tests/test_layers.py``'s."""
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    ranked = {name for name, rank in LAYERS.items() if rank > 0}
    assert set(rows[1:]) == ranked | {"session"}  # after the header row
    order = section.split("in this order:", 1)[1].split("then", 1)[0]
    named = re.findall(r"`(\w+)`", order)
    assert named == sorted(ranked, key=lambda name: (-LAYERS[name], named.index(name)))


TOML = [pytest.param(e, id=e.name) for e in ALL_EXAMPLES if e.language == "toml"]
CODEX_CONFIGS = [p for p in TOML if "[model_providers." in p.values[0].code]


@pytest.mark.parametrize("example", TOML)
def test_the_toml_example_parses(example: Example) -> None:
    tomllib.loads(example.code)


def test_the_recipes_configure_codex() -> None:
    assert CODEX_CONFIGS


def requests_counted(port: int) -> dict[tuple[str, str], float]:
    """The gateway's ``gateway_requests_total``, by method and route."""
    counted: dict[tuple[str, str], float] = {}
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text.splitlines():
        if found := re.match(r'gateway_requests_total\{method="(\w+)",route="([^"]+)"', line):
            key = (found.group(1), found.group(2))
            counted[key] = counted.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return counted


@pytest.mark.parametrize("websockets", [True, False], ids=["websocket", "http"])
@pytest.mark.parametrize("example", CODEX_CONFIGS)
@pytest.mark.system
def test_codex_runs_on_the_recipe(
    example: Example,
    websockets: bool,
    codex: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Codex CLI with the recipe's ``config.toml`` reads the catalog and answers, over a
    WebSocket as written and over HTTP with ``supports_websockets = false``."""
    config = example.code
    assert "supports_websockets = true" in config
    if not websockets:
        config = config.replace("supports_websockets = true", "supports_websockets = false")
    home = tmp_path / "codex-home"
    home.mkdir()
    (tmp_path / "gateway").mkdir()
    with shipped_gateway(tmp_path / "gateway") as port:
        (home / "config.toml").write_text(SHIPPED_PORT.sub(f"127.0.0.1:{port}", config))
        result = run_codex(codex, home, "Say hi.")
        counted = requests_counted(port)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "echo: Say hi." in result.stdout
    assert counted.get(("GET", "/v1/models"), 0) >= 1  # the catalog, thanks to the auth table
    transport = ("WEBSOCKET", "/v1/responses") if websockets else ("POST", "/v1/responses")
    other = ("POST", "/v1/responses") if websockets else ("WEBSOCKET", "/v1/responses")
    assert counted.get(transport, 0) >= 1 and counted.get(other, 0) == 0, counted


UNITS = [pytest.param(e, id=e.name) for e in ALL_EXAMPLES if e.language == "ini"]


@pytest.mark.parametrize("example", UNITS)
@pytest.mark.system
def test_the_systemd_unit_verifies(example: Example, tmp_path: Path) -> None:
    """The unit, with this checkout for ``/srv/responses-gateway``, passes systemd's check."""
    verify = shutil.which("systemd-analyze")
    if verify is None:
        pytest.skip("checking the systemd unit needs systemd-analyze")
    unit = tmp_path / "responses-gateway.service"
    unit.write_text(example.code.replace("/srv/responses-gateway", str(REPO)))
    result = subprocess.run(
        [verify, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
