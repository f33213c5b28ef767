"""``mcp`` tools run by the gateway for models whose wire cannot run them (see :mod:`.run`)."""

from __future__ import annotations

from .run import McpUpstream
from .servers import has_mcp, holds_mcp, scrubbed

__all__ = ["McpUpstream", "has_mcp", "holds_mcp", "scrubbed"]
