"""``config.yaml``: its schema, ``${ENV_VAR}`` substitution and model routing."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from session import SessionSettings

from .auth_settings import AuthSettings

WireApi = Literal["chat_completions", "responses", "anthropic", "echo"]
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """A configuration that cannot be used; ``problems`` lists each with its key path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))
        self.problems = problems


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    keep_alive_seconds: int = Field(default=5, ge=1)
    max_connections: int = Field(default=1000, ge=1)
    shutdown_grace_seconds: int = Field(default=30, ge=0)
    allowed_hosts: list[str] | None = None
    allowed_origins: list[str] = Field(default_factory=list)
    workers: int = Field(default=1, ge=1)
    log_format: Literal["text", "json"] = "text"
    heartbeat_seconds: float = Field(default=10.0, gt=0)
    heartbeat_timeout_seconds: float = Field(default=40.0, gt=0)

    @model_validator(mode="after")
    def _heartbeat_outlives_a_missed_beat(self) -> ServerSettings:
        if self.heartbeat_timeout_seconds <= 2 * self.heartbeat_seconds:
            raise ValueError("heartbeat_timeout_seconds must be more than twice heartbeat_seconds")
        return self

    def hosts_allowed(self) -> list[str]:
        """``allowed_hosts``, or the loopback names when bound to loopback, else any."""
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        if self.host in LOOPBACK_HOSTS:
            return ["127.0.0.1", "localhost", "[::1]"]
        return ["*"]


class ProviderSettings(_Section):
    wire_api: WireApi
    base_url: str | None = None
    api_key: str | None = None
    timeout_seconds: float = Field(default=300.0, gt=0)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    stream_idle_timeout_seconds: float = Field(default=300.0, gt=0)
    max_stream_seconds: float = Field(default=1800.0, gt=0)
    max_response_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    max_connections: int = Field(default=100, ge=1)
    pool_timeout_seconds: float = Field(default=10.0, gt=0)
    background_connections: int | None = Field(default=None, ge=1)
    background_connections_per_project: int | None = Field(default=None, ge=1)
    headers: dict[str, str] = Field(default_factory=dict)
    # ``wire_api: anthropic`` only: the Messages API's version and beta headers.
    anthropic_version: str = "2023-06-01"
    anthropic_beta: str | None = None

    @model_validator(mode="after")
    def _needs_base_url(self) -> ProviderSettings:
        if self.wire_api == "anthropic" and not self.base_url:
            self.base_url = ANTHROPIC_BASE_URL
        if self.wire_api != "echo" and not self.base_url:
            raise ValueError(f"base_url is required for wire_api {self.wire_api!r}")
        return self

    @model_validator(mode="after")
    def _background_shares_fit(self) -> ProviderSettings:
        total, _ = self.background_shares()
        if total > self.max_connections:
            raise ValueError("background_connections may not exceed max_connections")
        per_project = self.background_connections_per_project
        if per_project is not None and per_project > total:
            raise ValueError(
                "background_connections_per_project may not exceed background_connections"
            )
        return self

    def background_shares(self) -> tuple[int, int]:
        """Connections background turns may hold at once: in all, and for one project.

        By default half the pool, and half of that for one project: the rest of the pool
        stays free for turns that a client waits for.
        """
        total = self.background_connections or max(1, self.max_connections // 2)
        per_project = self.background_connections_per_project or max(1, total // 2)
        return total, min(per_project, total)


Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class CodexModelSettings(_Section):
    """How Codex should use a model, for its model catalog (``GET /v1/models?client_version``)."""

    display_name: str | None = None
    description: str | None = None
    reasoning_levels: list[Effort] = Field(default_factory=list)
    default_reasoning_level: Effort | None = None
    shell_type: Literal["default", "local", "unified_exec", "disabled", "shell_command"] = (
        "shell_command"
    )
    apply_patch_tool_type: Literal["freeform", "function"] | None = "freeform"
    supports_parallel_tool_calls: bool = False
    base_instructions: str = ""
    priority: int = 0


DEFAULT_MAX_OUTPUT_TOKENS = 8192
# Thinking tokens per reasoning effort, for models that take a budget (``budget_tokens``).
DEFAULT_THINKING_BUDGETS: dict[Effort, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}


class ThinkingSettings(_Section):
    """How a client's ``reasoning.effort`` maps to a Messages API model's thinking.

    ``budget``: ``thinking.budget_tokens`` from ``budgets`` (kept below ``max_tokens``);
    ``adaptive``: adaptive thinking with ``output_config.effort``, for models that refuse a
    budget; ``off``: never think.
    """

    mode: Literal["budget", "adaptive", "off"] = "budget"
    budgets: dict[Effort, int] = Field(default_factory=lambda: dict(DEFAULT_THINKING_BUDGETS))


class ModelRoute(_Section):
    provider: str
    upstream_model: str | None = None
    context_window: int | None = Field(default=None, ge=1)
    # ``wire_api: anthropic``: the ``max_tokens`` sent when the client sets no
    # ``max_output_tokens`` (the API requires one), thinking, and prompt caching.
    max_output_tokens: int = Field(default=DEFAULT_MAX_OUTPUT_TOKENS, ge=1)
    thinking: ThinkingSettings = Field(default_factory=ThinkingSettings)
    prompt_cache: Literal["auto", "off"] = "auto"
    codex: CodexModelSettings = Field(default_factory=CodexModelSettings)


class Route(BaseModel):
    """Where a requested model goes: the provider's name and settings, the upstream name."""

    provider_name: str
    provider: ProviderSettings
    upstream_model: str
    context_window: int | None = None
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    thinking: ThinkingSettings = Field(default_factory=ThinkingSettings)
    prompt_cache: Literal["auto", "off"] = "auto"


class CompactionSettings(_Section):
    # Seals compaction items; unset, one is generated and kept in the session store.
    secret: str | None = Field(default=None, min_length=16)


class GatewayConfig(_Section):
    server: ServerSettings = Field(default_factory=ServerSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    session: SessionSettings = Field(default_factory=SessionSettings)
    providers: dict[str, ProviderSettings] = Field(
        default_factory=lambda: {"echo": ProviderSettings(wire_api="echo")}
    )
    models: dict[str, ModelRoute] = Field(default_factory=dict)
    default_provider: str | None = None

    @model_validator(mode="after")
    def _providers_exist(self) -> GatewayConfig:
        problems = [
            f"models.{name}.provider: unknown provider {route.provider!r}"
            for name, route in self.models.items()
            if route.provider not in self.providers
        ]
        if self.default_provider is not None and self.default_provider not in self.providers:
            problems.append(f"default_provider: unknown provider {self.default_provider!r}")
        if (exposed := self.exposure_problem()) is not None:
            problems.append(exposed)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def exposure_problem(self) -> str | None:
        """Why this configuration must not run: open to every caller off loopback."""
        if self.auth.mode == "none" and self.server.host not in LOOPBACK_HOSTS:
            return (
                f"auth.mode: 'none' is allowed only on a loopback address, and server.host is "
                f"{self.server.host!r}; set auth.mode: keys (with auth.keys or managed keys)"
            )
        return None

    def stale_after_seconds(self) -> float:
        """Age past which an ``in_progress`` turn cannot still be running on any instance."""
        longest = max(
            (p.timeout_seconds + p.max_stream_seconds for p in self.providers.values()),
            default=0.0,
        )
        return longest + self.server.shutdown_grace_seconds + 60.0

    def route(self, model: str) -> Route | None:
        """Return where ``model`` goes, or ``None`` if nothing routes it."""
        listed = self.models.get(model)
        if listed is not None:
            return Route(
                provider_name=listed.provider,
                provider=self.providers[listed.provider],
                upstream_model=listed.upstream_model or model,
                context_window=listed.context_window,
                max_output_tokens=listed.max_output_tokens,
                thinking=listed.thinking,
                prompt_cache=listed.prompt_cache,
            )
        if self.default_provider is not None:
            name = self.default_provider
            return Route(provider_name=name, provider=self.providers[name], upstream_model=model)
        return None


def substitute_env(value: Any, env: Mapping[str, str], path: str = "") -> tuple[Any, list[str]]:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string; report unset variables."""
    problems: list[str] = []
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, child in value.items():
            result[key], found = substitute_env(child, env, f"{path}.{key}" if path else str(key))
            problems += found
        return result, problems
    if isinstance(value, list):
        items = []
        for index, child in enumerate(value):
            item, found = substitute_env(child, env, f"{path}[{index}]")
            items.append(item)
            problems += found
        return items, problems
    if not isinstance(value, str):
        return value, problems

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        problems.append(f"{path}: environment variable {name} is not set")
        return ""

    return _ENV_REFERENCE.sub(replace, value), problems


def _describe(error: ValidationError) -> list[str]:
    lines = []
    for detail in error.errors():
        path = ".".join(str(part) for part in detail["loc"])
        lines.append(f"{path or '(top level)'}: {detail['msg']}")
    return lines


def parse_config(raw: Any, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Validate an already-loaded YAML document; raise :class:`ConfigError` on any problem."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(["(top level): the configuration must be a mapping"])
    substituted, problems = substitute_env(raw, os.environ if env is None else env)
    try:
        config = GatewayConfig.model_validate(substituted)
    except ValidationError as error:
        problems += _describe(error)
    if problems:
        raise ConfigError(problems)
    return config


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read and validate ``config.yaml``; raise :class:`ConfigError` on any problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError([f"{path}: cannot read ({error.strerror})"]) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError([f"{path}: not valid YAML ({error})"]) from None
    return parse_config(raw, env)
