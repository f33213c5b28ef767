"""``gateway serve``: the checks of the machine, the summary of what runs, then the server
until it is stopped."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..edge.processes import serve as run_server
from ..edge.server import StartupFailed
from ..observability.request_log import configure_logging
from . import startup
from .checking import load

logger = logging.getLogger("gateway.server")


def serve(args: argparse.Namespace, path: Path) -> int:
    """Serve the configuration at ``path`` (with ``--host`` and ``--port`` over it) until
    SIGTERM or Ctrl-C; return the exit status."""
    config = load(path)
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
        run_server(config, args.log_level)
    except StartupFailed as failed:
        why = "the server did not start (see above)"
        if failed.cause is not None:
            why = startup.failure_line(failed.cause, config)
        print(f"gateway: {why}", file=sys.stderr)
        return 1
    logger.info("stopped")
    return 0
