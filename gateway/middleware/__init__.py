"""Pure-ASGI middleware, one per module."""

from .access_log import AccessLogMiddleware
from .allowed_hosts import AllowedHostsMiddleware
from .api_keys import APIKeyMiddleware
from .json_only import JSONOnlyMiddleware

__all__ = [
    "APIKeyMiddleware",
    "AccessLogMiddleware",
    "AllowedHostsMiddleware",
    "JSONOnlyMiddleware",
]
