"""Pure-ASGI middleware, one per module."""

from .access_log import AccessLogMiddleware
from .allowed_hosts import AllowedHostsMiddleware
from .json_only import JSONOnlyMiddleware

__all__ = ["AccessLogMiddleware", "AllowedHostsMiddleware", "JSONOnlyMiddleware"]
