"""The ``gateway`` command: ``serve``, ``check-config`` and the operator's commands.

Exit statuses: 0 done (``serve``: stopped by SIGTERM or Ctrl-C), 1 a problem of the machine
(a folder that cannot be created, a port in use, a database that cannot be reached, a driver
not installed), 2 a problem of the configuration or of the command line, 130 interrupted
before serving.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import ConfigError, GatewayConfig, host_problem, load_config
from ..edge.processes import serve
from ..edge.server import StartupFailed
from ..observability.request_log import configure_logging
from . import startup, store_commands

DEFAULT_CONFIG = "config.yaml"
CONFIG_HELP = "the configuration file (default: $GATEWAY_CONFIG, else ./config.yaml)"
DESCRIPTION = (
    "An OpenAI Responses-compatible gateway: it stores every turn, rebuilds each chain's "
    "context and sends it to Chat Completions, Responses or Anthropic Messages upstreams."
)
EPILOG = (
    "Start with 'gateway check-config', then 'gateway serve'; each command has its own "
    "--help. The configuration's keys are in docs/configuration.md."
)
INTERRUPTED = 130  # the shell's status for a command ended by Ctrl-C

logger = logging.getLogger("gateway.server")


def port_number(text: str) -> int:
    """``--port``: a whole number from 0 to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port: a whole number from 0 to 65535 (0: one the OS chooses)"
        )
    return port


def host_name(text: str) -> str:
    """``--host``: an IP address or host name, as ``server.host``."""
    if (problem := host_problem(text)) is not None:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem}")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {startup.version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(commands)
    return parser


def add_commands(commands: Any) -> None:
    """Every subcommand; another command module adds its own here with ``CONFIG_HELP``."""
    _add_serve(commands)
    _add_check_config(commands)
    store_commands.add_commands(commands, CONFIG_HELP)
    store_commands.add_record_commands(commands, CONFIG_HELP)


def _add_serve(commands: Any) -> None:
    serve_command = commands.add_parser(
        "serve",
        help="start the gateway",
        description="Start the gateway; SIGTERM or Ctrl-C stops it (a second Ctrl-C at once).",
    )
    serve_command.add_argument("--config", help=CONFIG_HELP)
    serve_command.add_argument("--host", type=host_name, help="listen here, not server.host")
    serve_command.add_argument(
        "--port", type=port_number, help="listen here, not server.port (0: a free port)"
    )
    serve_command.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )


def _add_check_config(commands: Any) -> None:
    check = commands.add_parser(
        "check-config",
        help="report every problem in a configuration",
        description=(
            "Report every problem that would stop 'gateway serve' (exit status 2 for the "
            "configuration, 1 for the machine), and warnings; print what would run."
        ),
    )
    check.add_argument("--config", help=CONFIG_HELP)


def config_file(given: str | None) -> Path:
    """``--config``, else ``$GATEWAY_CONFIG``, else ``./config.yaml``, made absolute."""
    return Path(given or os.environ.get("GATEWAY_CONFIG") or DEFAULT_CONFIG).absolute()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = config_file(args.config)
    try:
        if args.command == "check-config":
            return _check_config(path)
        if args.command == "serve":
            return _serve(args, path)
        config = _load(path)
        if config is None:
            return 2
        return store_commands.run(args, config)
    except KeyboardInterrupt:
        print("gateway: interrupted", file=sys.stderr)
        return INTERRUPTED


def _load(path: Path) -> GatewayConfig | None:
    """The configuration, its SQLite path anchored to its folder; ``None`` once its problems
    are printed."""
    try:
        config = load_config(path)
    except ConfigError as error:
        _print_problems(error.problems, path)
        return None
    startup.anchor_sqlite_path(config.session, path)
    return config


def _print_problems(problems: list[str], path: Path) -> None:
    print(f"gateway: invalid configuration ({path}):", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)


def _check_config(path: Path) -> int:
    try:
        config = load_config(path)
    except ConfigError as error:
        _print_problems(error.problems, path)
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
            _print_problems(found.config, path)
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


def _serve(args: argparse.Namespace, path: Path) -> int:
    config = _load(path)
    if config is None:
        return 2
    if args.host is not None:
        config.server.host = args.host
        if (exposed := config.exposure_problem()) is not None:
            print(f"gateway: --host: {exposed}", file=sys.stderr)
            return 2
    if args.port is not None:
        config.server.port = args.port
    found = startup.examine(
        config.server,
        config.session,
        serving=True,
        compaction_secret=config.compaction.secret is not None,
    )
    if found.config or found.environment:
        for problem in found.config + found.environment:
            print(f"gateway: {problem}", file=sys.stderr)
        return found.exit_status()
    configure_logging(args.log_level, config.server.log_format)
    for line in startup.summary(config, path):
        logger.info("%s", line)
    if (warning := startup.routing_warning(config)) is not None:
        found.warnings.append(warning)
    for warning in found.warnings:
        logger.warning("%s", warning)
    try:
        serve(config, args.log_level)
    except StartupFailed as failed:
        why = "the server did not start (see above)"
        if failed.cause is not None:
            why = startup.failure_line(failed.cause, config)
        print(f"gateway: {why}", file=sys.stderr)
        return 1
    logger.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
