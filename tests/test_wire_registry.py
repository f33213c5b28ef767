"""The wire APIs in one table: the configuration's names, each wire's adapter, and no code
elsewhere that asks which wire a provider speaks by its name."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from gateway import ConfigError, parse_config
from gateway.upstream.wires.registry import ADAPTERS
from gateway.wire_settings import WIRES, WireApi

from .servers import REPO

pytestmark = [pytest.mark.unit]

# The two tables themselves.
_TABLES = {Path("gateway/wire_settings.py"), Path("gateway/upstream/wires/registry.py")}


def test_every_configured_wire_has_its_entry_and_its_adapter() -> None:
    assert set(get_args(WireApi)) == set(WIRES) == set(ADAPTERS)
    assert all(name == wire.name for name, wire in WIRES.items())


def _names_a_wire(node: ast.AST) -> bool:
    """``….wire_api`` compared with a string, or looked up in a collection of them."""
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    if not any(isinstance(side, ast.Attribute) and side.attr == "wire_api" for side in sides):
        return False
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) for s in sides for n in ast.walk(s)
    ) or any(isinstance(side, ast.Name) and side.id.isupper() for side in sides)


def test_no_code_outside_the_tables_branches_on_a_wire_name() -> None:
    found = []
    for path in sorted((REPO / "gateway").rglob("*.py")):
        relative = path.relative_to(REPO)
        if relative in _TABLES:
            continue
        tree = ast.parse(path.read_text(), str(relative))
        found += [f"{relative}:{n.lineno}" for n in ast.walk(tree) if _names_a_wire(n)]
    assert found == []


def _provider(**settings: object) -> dict[str, object]:
    return {"providers": {"p": settings}, "default_provider": "p"}


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (
            {"wire_api": "chat_completions", "base_url": "http://x/v1", "native_tools": ["mcp"]},
            "providers.p: native_tools: only a provider with wire_api 'responses' reads it",
        ),
        (
            {"wire_api": "responses", "base_url": "http://x/v1", "anthropic_beta": "b"},
            "providers.p: anthropic_beta: only a provider with wire_api 'anthropic' reads it",
        ),
    ],
)
def test_a_setting_of_another_wire_is_refused_naming_its_wire(
    settings: dict[str, object], problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_provider(**settings), env={})
    assert any(problem in line for line in caught.value.problems), caught.value.problems


def test_each_wire_fills_or_requires_its_base_url() -> None:
    anthropic = parse_config(_provider(wire_api="anthropic"), env={}).providers["p"]
    assert anthropic.base_url == "https://api.anthropic.com"
    assert parse_config(_provider(wire_api="echo"), env={}).providers["p"].base_url is None
    with pytest.raises(ConfigError) as caught:
        parse_config(_provider(wire_api="responses"), env={})
    assert "providers.p.base_url: required for wire_api 'responses'" in caught.value.problems[0]


def test_a_key_goes_in_its_wires_header() -> None:
    assert WIRES["anthropic"].key_headers("k") == {"x-api-key": "k"}
    assert WIRES["chat_completions"].key_headers("k") == {"Authorization": "Bearer k"}
