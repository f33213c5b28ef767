"""An OpenAI Responses-compatible gateway that keeps conversation state for its clients."""

from .app import create_app
from .config import ConfigError, GatewayConfig, load_config, parse_config

__all__ = ["ConfigError", "GatewayConfig", "create_app", "load_config", "parse_config"]
