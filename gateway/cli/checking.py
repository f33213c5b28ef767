"""``gateway check-config``, and the configuration every other command loads: its problems
printed as one list naming the file."""

from __future__ import annotations

import sys
from pathlib import Path

from ..config import ConfigError, GatewayConfig, load_config
from . import startup


def load(path: Path) -> GatewayConfig | None:
    """The configuration, its SQLite path anchored to its folder; ``None`` once its problems
    are printed."""
    try:
        config = load_config(path)
    except ConfigError as error:
        print_problems(error.problems, path)
        return None
    startup.anchor_sqlite_path(config.session, path)
    return config


def print_problems(problems: list[str], path: Path) -> None:
    print(f"gateway: invalid configuration ({path}):", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)


def check_config(path: Path) -> int:
    """Print every problem of the configuration at ``path`` and of the machine, the warnings,
    and what would run; return the exit status."""
    try:
        config = load_config(path)
    except ConfigError as error:
        print_problems(error.problems, path)
        if error.session is not None:
            startup.anchor_sqlite_path(error.session, path)
        found = startup.examine(error.server, error.session, serving=False)
        _print_findings(found, also_config=True)
        return 2
    startup.anchor_sqlite_path(config.session, path)
    found = startup.examine(
        config.server,
        config.session,
        serving=False,
        compaction_secret=config.compaction.secret is not None,
    )
    if (warning := startup.routing_warning(config)) is not None:
        found.warnings.append(warning)
    if found.config or found.environment:
        if found.config:
            print_problems(found.config, path)
        _print_findings(found, also_config=False)
        return found.exit_status()
    print(f"configuration OK: {path}")
    for line in startup.summary(config, path):
        print(f"  {line}")
    _print_findings(found, also_config=False)
    return 0


def _print_findings(found: startup.Findings, *, also_config: bool) -> None:
    """The machine's problems and the warnings; the configuration's too if ``also_config``
    (those of a configuration that did load)."""
    for problem in (found.config if also_config else []) + found.environment:
        print(f"gateway: {problem}", file=sys.stderr)
    for warning in found.warnings:
        print(f"gateway: warning: {warning}", file=sys.stderr)
