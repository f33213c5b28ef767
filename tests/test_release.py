"""The gateway as released: an sdist, a wheel built from it, installed in a fresh virtual
environment and serving, with nothing of this checkout on its path."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest

from .servers import REPO, start_instance

pytestmark = [pytest.mark.system]

# What ``python -m build`` needs of the checkout: the project's card and its packages.
SOURCES = ["pyproject.toml", "README.md", "LICENSE", "gateway", "session"]
# Files that are not modules yet every installation needs.
DATA = [
    "gateway/py.typed",
    "session/py.typed",
    "gateway/console/static/index.html",
    "gateway/console/static/console.js",
    "gateway/console/static/console.css",
    "gateway/console/static/uPlot.iife.min.js",
]


def run(*command: str | Path, cwd: Path) -> str:
    """Run ``command`` from ``cwd`` (never this checkout, whose packages it would import)."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.timeout(900)  # two builds and an install from the package index
def test_the_wheel_built_from_the_sdist_installs_and_serves(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy(REPO / name, source / name)
    dist = tmp_path / "dist"
    # Without --sdist or --wheel, build makes the sdist, then the wheel from the sdist alone.
    run(sys.executable, "-m", "build", "--outdir", dist, source, cwd=tmp_path)
    (sdist,), (wheel,) = dist.glob("*.tar.gz"), dist.glob("*.whl")
    with tarfile.open(sdist) as archive:
        packed = {"/".join(name.split("/")[1:]) for name in archive.getnames()}
    with zipfile.ZipFile(wheel) as archive:
        wheeled = set(archive.namelist())
    assert set(DATA) <= packed and set(DATA) <= wheeled, set(DATA) - (packed & wheeled)
    assert not any(name.startswith("tests/") for name in wheeled)

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    constraints = REPO / "tests" / "constraints.txt"
    run(python, "-m", "pip", "install", "-q", "-c", constraints, wheel, cwd=tmp_path)
    imports = "import gateway, session; print(gateway.__file__, session.__file__)"
    where = run(python, "-c", imports, cwd=tmp_path)
    assert all(path.startswith(str(venv)) for path in where.split()), where

    served = tmp_path / "served"
    served.mkdir()
    config = served / "config.yaml"
    shutil.copy(REPO / "config.yaml", config)  # the shipped configuration, as the README runs it
    process, url = start_instance(config, python=str(python))
    try:
        answer = httpx.post(f"{url}/v1/responses", json={"model": "echo", "input": "Hi"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["output"][0]["content"][0]["text"].startswith("echo: Hi")
        console = httpx.get(f"{url}/console/", follow_redirects=True)
        assert console.status_code == 200 and "<html" in console.text.lower()
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert (served / "data" / "sessions.db").exists()  # ./data beside where it was started
