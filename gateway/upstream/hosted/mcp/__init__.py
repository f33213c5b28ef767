"""``mcp`` tools run by the gateway for models whose wire cannot run them: a kind of the
hosted loop (:mod:`.kind`)."""

from __future__ import annotations

from .kind import Mcp
from .servers import has_mcp, holds_mcp, scrubbed

__all__ = ["Mcp", "has_mcp", "holds_mcp", "scrubbed"]
