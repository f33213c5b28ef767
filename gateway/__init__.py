"""An OpenAI Responses-compatible gateway that keeps conversation state for its clients.

Its names are imported when first used, so that the command line's ``--version`` and
``--help`` need nothing of the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ConfigError, GatewayConfig, load_config, parse_config
    from .edge.app import create_app

__all__ = ["ConfigError", "GatewayConfig", "create_app", "load_config", "parse_config"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .edge.app import create_app

        return create_app
    if name in __all__:
        from . import config

        return getattr(config, name)
    raise AttributeError(f"module 'gateway' has no attribute {name!r}")
