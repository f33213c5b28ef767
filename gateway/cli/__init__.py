"""``gateway``: the command line (``serve``, ``check-config``, and the store's commands)."""

from .main import main

__all__ = ["main"]
