"""The suite's tiers: every test has exactly one, so ``-m`` selects by weight.

A module names its tier in ``pytestmark``; a test heavier than the rest of its module (or a
parameter of it, such as a target served by a ``gateway serve`` process) carries its own
marker, which wins over the module's.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

TIERS = ("unit", "contract", "api", "system")


def nearest_tier(item: pytest.Item) -> str:
    """The tier marked nearest to ``item``; a ``ValueError`` says why there is none."""
    for node in item.iter_parents():
        tiers = sorted({mark.name for mark in node.own_markers if mark.name in TIERS})
        if len(tiers) > 1:
            raise ValueError(f"{' and '.join(tiers)} on one level: choose one")
        if tiers:
            return tiers[0]
    raise ValueError(
        f"no tier: add pytestmark = [pytest.mark.<tier>] to its module ({', '.join(TIERS)};"
        " see docs/development.md)"
    )


def settle_tiers(items: Sequence[pytest.Item]) -> None:
    """Leave each test its nearest tier as its own marker, and no other, so that ``-m``
    sees one tier per test; stop with every test that has none or two on one level."""
    chosen: list[tuple[pytest.Item, str]] = []
    problems: list[str] = []
    for item in items:
        try:
            chosen.append((item, nearest_tier(item)))
        except ValueError as problem:
            problems.append(f"  {item.nodeid}: {problem}")
    if problems:
        raise pytest.UsageError("every test needs exactly one tier:\n" + "\n".join(problems))
    for item, tier in chosen:
        for node in item.iter_parents():
            if node is not item:
                node.own_markers[:] = [m for m in node.own_markers if m.name not in TIERS]
        if item.get_closest_marker(tier) is None:
            item.add_marker(tier)
