"""The layers of the code, kept: each imports only the layers below it, and nothing cycles.

From the top: ``cli``, ``edge`` (HTTP and WebSocket), ``turn``, ``context``,
``observability``, ``api``, ``upstream``, then the base (``config``, ``auth_settings``,
``errors``, ``sealing``, ``tracing``); ``session`` below them all never imports ``gateway``. The web
framework and the server are the edge's alone. Imports made only for type checking count too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {
    "config": 0,
    "auth_settings": 0,
    "errors": 0,
    "sealing": 0,
    "routing_settings": 0,
    "config_sections": 0,
    "web_search_settings": 0,
    "file_search_settings": 0,
    "config_problems": 0,
    "url_prefixes": 0,
    "observability_settings": 0,
    "wire_settings": 0,
    "tracing": 0,
    "upstream": 1,
    "retrieval": 1,
    "api": 2,
    "observability": 3,
    "context": 4,
    "turn": 5,
    "edge": 6,
    "cli": 7,
}
EDGE_ONLY = ("starlette", "uvicorn", "websockets")


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """Every module ``name`` imports, as an absolute name (submodules resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names]
            named = [module for module in submodules if module in known]
            yield from named or [target]


GATEWAY = modules("gateway")
GRAPH = {name: set(imports(name, path, GATEWAY)) for name, path in GATEWAY.items()}


def layer(name: str) -> str | None:
    parts = name.split(".")  # another package's ``x.context`` is no layer of the gateway's
    return parts[1] if parts[0] == "gateway" and len(parts) > 1 and parts[1] in LAYERS else None


def test_every_gateway_module_sits_in_a_layer() -> None:
    outside = {
        name
        for name in GATEWAY
        if layer(name) is None and name not in ("gateway", "gateway.__main__")
    }
    assert outside == set()


@pytest.mark.parametrize("name", sorted(GATEWAY))
def test_a_module_imports_no_layer_above_its_own(name: str) -> None:
    own = layer(name)
    if own is None:
        return
    above = sorted(
        target
        for target in GRAPH[name]
        if (other := layer(target)) is not None and LAYERS[other] > LAYERS[own]
    )
    assert above == [], f"{name} ({own}) imports from above: {above}"


def test_the_web_framework_is_the_edges_alone() -> None:
    leaks = sorted(
        (name, target)
        for name, targets in GRAPH.items()
        for target in targets
        if target.split(".")[0] in EDGE_ONLY and layer(name) not in ("edge", "cli")
    )
    assert leaks == []


def test_session_never_imports_gateway() -> None:
    session = modules("session")
    leaks = sorted(
        (name, target)
        for name, path in session.items()
        for target in imports(name, path, session)
        if target.split(".")[0] == "gateway"
    )
    assert leaks == []


def test_no_import_cycles() -> None:
    cycles: list[list[str]] = []
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        order[name] = low[name] = len(order)
        stack.append(name)
        for target in GRAPH.get(name, ()):
            if target not in GATEWAY:
                continue
            if target not in order:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in stack:
                low[name] = min(low[name], order[target])
        if low[name] == order[name]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(GATEWAY):
        if name not in order:
            visit(name)
    assert cycles == []
