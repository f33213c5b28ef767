"""Pure-ASGI middleware, one per module."""

from .allowed_hosts import AllowedHostsMiddleware
from .json_only import JSONOnlyMiddleware

__all__ = ["AllowedHostsMiddleware", "JSONOnlyMiddleware"]
