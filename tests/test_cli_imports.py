"""The ``gateway`` command imports what the command it runs needs: ``--version`` and
``--help`` none of the app, a command on the store or the configuration not the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .servers import REPO

pytestmark = [pytest.mark.system]

THE_SERVER = {"starlette", "uvicorn", "aiohttp", "websockets", "gateway.edge", "gateway.turn"}
THE_APP = THE_SERVER | {"httpx", "pydantic", "session", "gateway.config", "gateway.upstream"}


def imported_by(*args: str) -> set[str]:
    """The modules the installed ``gateway`` script imports to run ``args`` (as
    ``python -X importtime`` lists them), checking it exits 0."""
    script = Path(sys.executable).with_name("gateway")
    assert script.exists(), f"the console script is not installed beside {sys.executable}"
    ran = subprocess.run(
        [sys.executable, "-X", "importtime", str(script), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    lines = [line for line in ran.stderr.splitlines() if line.startswith("import time:")]
    assert ran.returncode == 0, ran.stderr.replace("\n".join(lines), "")
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}  # [0] names the columns


def among(modules: set[str], packages: set[str]) -> list[str]:
    """The ``modules`` that are one of ``packages`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


@pytest.mark.parametrize(
    "args", [["--version"], ["--help"], ["serve", "--help"], ["keys", "create", "--help"]]
)
def test_version_and_help_import_nothing_of_the_app(args: list[str]) -> None:
    modules = imported_by(*args)
    assert "gateway.cli.main" in modules
    assert among(modules, THE_APP) == []


def test_a_command_on_the_configuration_or_the_store_imports_no_server(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    session = {"sqlite": {"path": str(tmp_path / "s.db")}}
    config.write_text(
        yaml.safe_dump({"session": session, "models": {"echo": {"provider": "echo"}}})
    )
    checked = imported_by("check-config", "--config", str(config))
    assert "gateway.config" in checked and among(checked, THE_SERVER) == []
    listed = imported_by("keys", "list", "--config", str(config))
    assert "session.sqlite" in listed and among(listed, THE_SERVER) == []
