"""``gateway serve``, ``gateway check-config`` and the operator's commands."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from session import BackendNotInstalled, check_backend_installed

from ..config import ConfigError, GatewayConfig, load_config
from ..edge.server import serve
from ..observability.request_log import configure_logging
from . import store_commands

DEFAULT_CONFIG = "config.yaml"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    config_help = "path to the configuration (default: $GATEWAY_CONFIG or ./config.yaml)"

    serve = commands.add_parser("serve", help="start the gateway")
    serve.add_argument("--config", help=config_help)
    serve.add_argument("--host", help="override server.host")
    serve.add_argument("--port", type=int, help="override server.port")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    check = commands.add_parser("check-config", help="report every problem in a configuration")
    check.add_argument("--config", help=config_help)
    store_commands.add_commands(commands, config_help)
    return parser


def _load(path: str | None) -> GatewayConfig:
    return load_config(path or os.environ.get("GATEWAY_CONFIG") or DEFAULT_CONFIG)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = _load(args.config)
        check_backend_installed(config.session)
    except (ConfigError, BackendNotInstalled) as error:
        print(f"gateway: {error}", file=sys.stderr)
        return 2
    if args.command == "check-config":
        print(
            f"configuration OK: session backend {config.session.backend}, "
            f"{len(config.providers)} provider(s), {len(config.models)} model route(s)"
        )
        return 0
    if args.command in store_commands.COMMANDS:
        return store_commands.run(args, config)
    if args.host:
        config.server.host = args.host
        if (exposed := config.exposure_problem()) is not None:
            print(f"gateway: --host: {exposed}", file=sys.stderr)
            return 2
    if args.port is not None:
        config.server.port = args.port
    configure_logging(args.log_level, config.server.log_format)
    serve(config, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
