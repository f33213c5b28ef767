"""Pure-ASGI middleware, one per module."""

from .allowed_hosts import AllowedHostsMiddleware
from .allowed_origins import AllowedOriginsMiddleware
from .api_keys import APIKeyMiddleware
from .json_only import JSONOnlyMiddleware
from .observe import ObserveMiddleware
from .traced import TraceMiddleware
from .uncaught import UncaughtMiddleware

__all__ = [
    "APIKeyMiddleware",
    "AllowedHostsMiddleware",
    "AllowedOriginsMiddleware",
    "JSONOnlyMiddleware",
    "ObserveMiddleware",
    "TraceMiddleware",
    "UncaughtMiddleware",
]
