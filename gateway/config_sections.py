"""The sections of ``config.yaml`` under ``server``, ``providers`` and ``models``, and the
:class:`Route` a model's turn takes; the whole file's schema is :mod:`gateway.config`."""

from __future__ import annotations

import ipaddress
import os
import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .routing_settings import Deployment, Pricing, ProviderKey, RetrySettings
from .url_prefixes import url_parts
from .wire_settings import WIRES, Wire, WireApi, wires_reading

# Every ``tools[].type`` of the Responses API (the ``openai`` SDK's ``Tool`` union).
TOOL_TYPES = frozenset(
    {
        "function",
        "custom",
        "namespace",
        "file_search",
        "web_search",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "computer",
        "computer_use_preview",
        "mcp",
        "code_interpreter",
        "programmatic_tool_calling",
        "image_generation",
        "local_shell",
        "shell",
        "tool_search",
        "apply_patch",
    }
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
_HOST_LABEL = r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"^{_HOST_LABEL}(\.{_HOST_LABEL})*\.?$")


def host_problem(host: str) -> str | None:
    """Why ``host`` cannot be listened on (``None`` if it can): an IP address or a host name."""
    if host.startswith("[") and host.endswith("]"):
        return "write an IPv6 address without brackets (e.g. ::1)"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if len(host) <= 253 and _HOST_NAME.match(host):
        return None
    return (
        "must be an IP address or a host name, without scheme or port "
        "(e.g. 127.0.0.1, or 0.0.0.0 for every interface)"
    )


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an upstream's ``base_url`` (``None`` if it can)."""
    example = "e.g. https://api.deepseek.com/v1"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"must start with http:// or https:// ({example})"
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number from 0 to 65535
    except ValueError:
        return f"has an invalid port ({example})"
    if not parts.hostname:
        return f"has no host ({example})"
    return None


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, as a container's cpuset limits it)."""
    return len(os.sched_getaffinity(0))


def resolved_workers(workers: object, backend: object) -> object:
    """``server.workers: auto``: a worker per usable core, or one on the memory store,
    whose turns each process would keep for itself."""
    if workers != "auto":
        return workers
    return 1 if backend == "memory" else usable_cores()


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    # Above the idle limits of the common HTTP clients (httpx 5 s, aiohttp 15 s): they close first.
    keep_alive_seconds: int = Field(default=20, ge=1)
    max_connections: int = Field(default=1000, ge=1)
    max_websockets: int = Field(default=1000, ge=1)
    max_websockets_per_project: int = Field(default=200, ge=1)
    max_websockets_per_key: int = Field(default=50, ge=1)
    websocket_idle_seconds: float = Field(default=600.0, gt=0, le=3600)
    websocket_connection_seconds: float = Field(default=3600.0, gt=0)
    websocket_max_in_flight: int = Field(default=16, ge=1)
    websocket_max_streams: int = Field(default=32, ge=1)
    shutdown_grace_seconds: int = Field(default=30, ge=0)
    allowed_hosts: list[str] | None = None
    allowed_origins: list[str] = Field(default_factory=list)
    workers: int = Field(default=1, ge=1)  # "auto" in config.yaml: see resolved_workers
    log_format: Literal["text", "json"] = "text"
    heartbeat_seconds: float = Field(default=10.0, gt=0)
    heartbeat_timeout_seconds: float = Field(default=40.0, gt=0, validate_default=True)

    @field_validator("workers", mode="before")
    @classmethod
    def _auto_workers(cls, workers: object) -> object:
        return resolved_workers(workers, None)

    @field_validator("host")
    @classmethod
    def _listenable(cls, host: str) -> str:
        if (problem := host_problem(host)) is not None:
            raise ValueError(problem)
        return host

    @field_validator("heartbeat_timeout_seconds")
    @classmethod
    def _heartbeat_outlives_a_missed_beat(cls, timeout: float, info: ValidationInfo) -> float:
        beat = info.data.get("heartbeat_seconds")
        if beat is not None and timeout <= 2 * beat:
            raise ValueError("must be more than twice heartbeat_seconds")
        return timeout

    def hosts_allowed(self) -> list[str]:
        """``allowed_hosts``, or the loopback names when bound to loopback, else any."""
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        if self.host in LOOPBACK_HOSTS:
            return ["127.0.0.1", "localhost", "[::1]"]
        return ["*"]


class ProviderSettings(_Section):
    wire_api: WireApi
    base_url: str | None = Field(default=None, validate_default=True)
    api_key: str | None = None
    api_keys: list[ProviderKey] = Field(default_factory=list)  # instead of ``api_key``
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
    # Who runs ``mcp`` tools: the gateway, or the upstream (a Responses provider that can).
    mcp: Literal["gateway", "upstream"] | None = None
    # ``wire_api: responses`` only: the tool types the upstream runs itself (default: all).
    native_tools: list[str] | None = None

    def mcp_runner(self) -> Literal["gateway", "upstream"]:
        """``mcp``, by default ``upstream`` for a Responses provider that runs it natively
        and ``gateway`` else."""
        if self.mcp is not None:
            return self.mcp
        return "upstream" if self.runs_natively("mcp") else "gateway"

    @property
    def wire(self) -> Wire:
        """What the gateway knows of the provider's wire API."""
        return WIRES[self.wire_api]

    def runs_natively(self, tool_type: str) -> bool:
        """Whether the upstream itself runs tools of ``tool_type`` (a wire that runs
        tools: every type unless ``native_tools`` names them)."""
        if not self.wire.runs_tools:
            return False
        return self.native_tools is None or tool_type in self.native_tools

    @field_validator("native_tools")
    @classmethod
    def _known_tool_types(cls, tools: list[str] | None) -> list[str] | None:
        unknown = sorted(set(tools or ()) - TOOL_TYPES)
        if unknown:
            raise ValueError(
                f"unknown tool type(s) {', '.join(map(repr, unknown))} "
                f"(known: {', '.join(sorted(TOOL_TYPES))})"
            )
        return tools

    @field_validator("base_url")
    @classmethod
    def _needs_base_url(cls, base_url: str | None, info: ValidationInfo) -> str | None:
        wire_api = info.data.get("wire_api")  # absent when wire_api itself is invalid
        if not base_url:
            wire = WIRES.get(str(wire_api))
            if wire is None or not wire.http:
                return None
            if wire.default_base_url is None:
                raise ValueError(
                    f"required for wire_api {wire_api!r} (e.g. https://api.deepseek.com/v1)"
                )
            return wire.default_base_url
        if (problem := url_problem(base_url)) is not None:
            raise ValueError(problem)
        return base_url

    @model_validator(mode="after")
    def _settings_of_the_wire(self) -> ProviderSettings:
        for name in sorted(self.model_fields_set):
            readers = wires_reading(name)
            if readers and self.wire_api not in readers:
                raise ValueError(
                    f"{name}: only a provider with wire_api "
                    f"{' or '.join(map(repr, readers))} reads it"
                )
        return self

    @model_validator(mode="after")
    def _one_way_to_give_keys(self) -> ProviderSettings:
        if self.api_key and self.api_keys:
            raise ValueError("give api_key or api_keys, not both")
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
    provider: str | None = None
    upstream_model: str | None = None
    deployments: list[Deployment] = Field(default_factory=list)  # instead of ``provider``
    retry: RetrySettings = Field(default_factory=RetrySettings)
    fallbacks: list[str] = Field(default_factory=list)
    context_window_fallbacks: list[str] = Field(default_factory=list)
    pricing: Pricing | None = None
    context_window: int | None = Field(default=None, ge=1)
    # ``wire_api: anthropic``: the ``max_tokens`` sent when the client sets no
    # ``max_output_tokens`` (the API requires one), thinking, and prompt caching.
    max_output_tokens: int = Field(default=DEFAULT_MAX_OUTPUT_TOKENS, ge=1)
    thinking: ThinkingSettings = Field(default_factory=ThinkingSettings)
    prompt_cache: Literal["auto", "off"] = "auto"
    sampling: Literal["send", "drop"] = "send"  # ``temperature``/``top_p``, for Anthropic
    codex: CodexModelSettings = Field(default_factory=CodexModelSettings)

    @model_validator(mode="after")
    def _one_way_to_route(self) -> ModelRoute:
        if (self.provider is None) == (not self.deployments):
            raise ValueError("give provider (with upstream_model) or deployments, not both")
        if self.deployments and self.upstream_model is not None:
            raise ValueError("upstream_model goes in each deployment")
        return self

    def targets(self, name: str) -> list[Deployment]:
        """Where this model (called ``name`` by clients) may go, by weight."""
        if self.provider is not None:
            return [Deployment(provider=self.provider, upstream_model=self.upstream_model or name)]
        return [
            d.model_copy(update={"upstream_model": d.upstream_model or name})
            for d in self.deployments
        ]


class Route(BaseModel):
    """Where a requested model goes: the provider's name and settings, the upstream name."""

    provider_name: str
    provider: ProviderSettings
    upstream_model: str
    context_window: int | None = None
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    thinking: ThinkingSettings = Field(default_factory=ThinkingSettings)
    prompt_cache: Literal["auto", "off"] = "auto"
    sampling: Literal["send", "drop"] = "send"
    weight: float = 1.0

    @property
    def deployment(self) -> str:
        """The deployment's name: ``provider/upstream_model``."""
        return f"{self.provider_name}/{self.upstream_model}"


class McpServerSettings(_Section):
    """An MCP server the operator names: clients use it by ``server_label`` alone."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    description: str | None = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if (problem := url_problem(url)) is not None:
            raise ValueError(problem.replace("api.deepseek.com/v1", "mcp.example.com/mcp"))
        return url


class McpSettings(_Section):
    """The ``mcp`` tools the gateway runs itself: which servers, and its time limits.

    ``allowed_servers`` unset lets clients name any public server; set, only URLs that
    start with one of its entries (which may then be private addresses).
    """

    allowed_servers: list[str] | None = None
    servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    call_timeout_seconds: float = Field(default=60.0, gt=0)
    max_turn_seconds: float = Field(default=600.0, gt=0)

    @field_validator("allowed_servers")
    @classmethod
    def _comparable(cls, entries: list[str] | None) -> list[str] | None:
        for index, entry in enumerate(entries or []):
            try:
                url_parts(entry)
            except ValueError as why:
                raise ValueError(
                    f"entry {index} ({entry!r}) cannot be matched: {why} "
                    "(e.g. https://mcp.example.com/tools/)"
                ) from None
        return entries


class CompactionSettings(_Section):
    # Seals compaction items; unset, one is generated and kept in the session store.
    secret: str | None = Field(default=None, min_length=16)
