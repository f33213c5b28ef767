"""The Anthropic Messages API wire: request translation, answer translation, the adapter."""

from __future__ import annotations

from .adapter import AnthropicUpstream

__all__ = ["AnthropicUpstream"]
