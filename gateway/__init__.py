"""An OpenAI Responses-compatible gateway that keeps conversation state for its clients."""

from .config import ConfigError, GatewayConfig, load_config, parse_config
from .edge.app import create_app

__all__ = ["ConfigError", "GatewayConfig", "create_app", "load_config", "parse_config"]
