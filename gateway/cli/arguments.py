"""The ``gateway`` command line: every command's arguments, checked as they are read, and the
version it reports. It imports nothing of the gateway, so that ``--version`` and ``--help``
answer at once; a check that needs more imports it when it runs."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import Any

PACKAGE = "responses-gateway"
CONFIG_HELP = "the configuration file (default: $GATEWAY_CONFIG, else ./config.yaml)"
DESCRIPTION = (
    "An OpenAI Responses-compatible gateway: it stores every turn, rebuilds each chain's "
    "context and sends it to Chat Completions, Responses or Anthropic Messages upstreams."
)
EPILOG = (
    "Start with 'gateway check-config', then 'gateway serve'; each command has its own "
    "--help. The configuration's keys are in docs/configuration.md."
)


def version() -> str:
    """The installed package's version (``unknown`` when run from an uninstalled tree)."""
    try:
        return installed_version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


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
    from ..config_sections import host_problem

    if (problem := host_problem(text)) is not None:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem}")
    return text


def duration(text: str) -> float:
    """``--older-than``, ``--since``: ``30d``, ``12h``, ``90m``, ``45s``."""
    from session import parse_duration

    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def project(text: str) -> str:
    """``--project``: a project's name, as ``auth.keys[].project``."""
    from pydantic import TypeAdapter, ValidationError

    from ..auth_settings import ProjectName

    try:
        return TypeAdapter(ProjectName).validate_python(text)
    except ValidationError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a project is 1 to 64 letters, digits, '.', '_' or '-'"
        ) from None


def parser() -> argparse.ArgumentParser:
    """The whole command line: ``--version`` and every command."""
    made = argparse.ArgumentParser(prog="gateway", description=DESCRIPTION, epilog=EPILOG)
    made.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = made.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(commands)
    _add_check_config(commands)
    _add_store_commands(commands)
    _add_record_commands(commands)
    return made


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="start the gateway",
        description="Start the gateway; SIGTERM or Ctrl-C stops it (a second Ctrl-C at once).",
    )
    serve.add_argument("--config", help=CONFIG_HELP)
    serve.add_argument("--host", type=host_name, help="listen here, not server.host")
    serve.add_argument(
        "--port", type=port_number, help="listen here, not server.port (0: a free port)"
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


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


def _add_store_commands(commands: Any) -> None:
    keys = commands.add_parser("keys", help="create, list and revoke managed API keys")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a key; its secret is printed once")
    create.add_argument("--project", required=True, type=project)
    create.add_argument("--name")
    create.add_argument("--requests-per-minute", type=int, metavar="N")
    create.add_argument(
        "--budget-usd", type=float, metavar="N", help="spend per calendar month (UTC)"
    )
    create.add_argument(
        "--budget-tokens",
        type=int,
        metavar="N",
        help="input and output tokens per calendar month (UTC)",
    )
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--project", type=project)
    revoke = actions.add_parser("revoke", help="revoke a key on every instance")
    revoke.add_argument("key_id")

    prune = commands.add_parser("prune", help="delete records older than a duration")
    prune.add_argument("--older-than", required=True, type=duration, metavar="AGE")

    usage = commands.add_parser("usage", help="token totals by project and model")
    usage.add_argument("--project", type=project)
    usage.add_argument("--since", type=duration, metavar="AGE", help="e.g. 7d (default: all)")

    for each in (create, listing, revoke, prune, usage):
        each.add_argument("--config", help=CONFIG_HELP)


def _add_record_commands(commands: Any) -> None:
    """``gateway show``, ``export`` and ``import``: whole records, to read or to move."""
    shown = commands.add_parser(
        "show", help="print a stored response, its chain, or a conversation, for reading"
    )
    shown.add_argument(
        "id", metavar="ID", help="a response (resp_...) or a conversation (conv_...)"
    )
    shown.add_argument("--chain", action="store_true", help="every turn from the chain's first")
    shown.add_argument(
        "--project", type=project, default="default", help="its project (default: default)"
    )
    export = commands.add_parser(
        "export", help="write stored turns and conversations as JSON lines"
    )
    export.add_argument("--project", type=project, help="one project (default: every project)")
    export.add_argument("--output", metavar="FILE", help="write to FILE, not standard output")
    imported = commands.add_parser("import", help="read an export into the configured store")
    imported.add_argument("file", metavar="FILE", help="an export, or - for standard input")
    for each in (shown, export, imported):
        each.add_argument("--config", help=CONFIG_HELP)
