"""The README and docs/ tell the truth: their examples run, their keys and links exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from gateway import create_app
from gateway.config import GatewayConfig, load_config, parse_config

from .markdown_examples import REPO, Example, anchors, code_spans, examples, links, markdown_files
from .servers import loopback_socket, serve

pytestmark = [pytest.mark.unit]

ALL_EXAMPLES = [example for path in markdown_files() for example in examples(path)]
RUNNABLE = ("sh", "bash", "python")
SHIPPED_PORT = re.compile(r"\b(localhost|127\.0\.0\.1):8080\b")


def by_language(*languages: str) -> list[Any]:
    return [
        pytest.param(example, id=example.name)
        for example in ALL_EXAMPLES
        if example.language in languages and example.runs
    ]


@pytest.fixture(scope="module")
def gateway_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """A folder holding the shipped config on a port the OS chose, with its gateway serving."""
    folder = tmp_path_factory.mktemp("docs")
    sock = loopback_socket()
    port: int = sock.getsockname()[1]
    raw = yaml.safe_load((REPO / "config.yaml").read_text())
    raw["server"]["port"] = port
    raw["session"]["sqlite"]["path"] = str(folder / "data" / "sessions.db")
    (folder / "config.yaml").write_text(yaml.safe_dump(raw))
    (folder / ".venv").symlink_to(REPO / ".venv")
    with serve(create_app(load_config(folder / "config.yaml", env={})), sock):
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


@pytest.mark.parametrize("example", by_language(*RUNNABLE))
@pytest.mark.system
def test_the_example_runs(example: Example, gateway_dir: tuple[Path, int]) -> None:
    result = run_example(example, *gateway_dir)
    assert result.returncode == 0, f"{example.name}\n{result.stdout}\n{result.stderr}"
    if example.prints is not None:
        assert result.stdout.strip() == example.prints.strip()


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
