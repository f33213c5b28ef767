"""The ``gateway`` command: ``serve``, ``check-config`` and the operator's commands.

Exit statuses: 0 done (``serve``: stopped by SIGTERM or Ctrl-C), 1 a problem of the machine
(a folder that cannot be created, a port in use, a database that cannot be reached, a driver
not installed), 2 a problem of the configuration or of the command line, 130 interrupted
before serving.

Each command imports what it needs when it runs (the server only for ``serve``), so that
``--version``, ``--help`` and the commands on the store start at once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import arguments

DEFAULT_CONFIG = "config.yaml"
INTERRUPTED = 130  # the shell's status for a command ended by Ctrl-C


def config_file(given: str | None) -> Path:
    """``--config``, else ``$GATEWAY_CONFIG``, else ``./config.yaml``, made absolute."""
    return Path(given or os.environ.get("GATEWAY_CONFIG") or DEFAULT_CONFIG).absolute()


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments.parser().parse_args(argv)
    path = config_file(args.config)
    try:
        if args.command == "check-config":
            from .checking import check_config

            return check_config(path)
        if args.command == "serve":
            from .serving import serve

            return serve(args, path)
        from .checking import load
        from .store_commands import run

        config = load(path)
        return 2 if config is None else run(args, config)
    except KeyboardInterrupt:
        print("gateway: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
