"""``config.yaml``: its schema, ``${ENV_VAR}`` substitution and model routing."""

from __future__ import annotations

import copy
import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from session import SessionSettings

from .auth_settings import AuthSettings
from .routing_settings import Deployment, Pricing, ProviderKey, RetrySettings, RoutingSettings

WireApi = Literal["chat_completions", "responses", "anthropic", "echo"]
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """A configuration that cannot be used; ``problems`` lists each with its key path.

    ``server`` and ``session`` hold those sections when they are valid on their own, so that
    ``check-config`` can look at the machine (ports, folders, the database) all the same.
    """

    def __init__(
        self,
        problems: list[str],
        *,
        server: ServerSettings | None = None,
        session: SessionSettings | None = None,
    ) -> None:
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))
        self.problems = problems
        self.server = server
        self.session = session


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
    heartbeat_timeout_seconds: float = Field(default=40.0, gt=0, validate_default=True)

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

    @field_validator("base_url")
    @classmethod
    def _needs_base_url(cls, base_url: str | None, info: ValidationInfo) -> str | None:
        wire_api = info.data.get("wire_api")  # absent when wire_api itself is invalid
        if not base_url:
            if wire_api == "anthropic":
                return ANTHROPIC_BASE_URL
            if wire_api not in (None, "echo"):
                raise ValueError(
                    f"required for wire_api {wire_api!r} (e.g. https://api.deepseek.com/v1)"
                )
            return None
        if (problem := url_problem(base_url)) is not None:
            raise ValueError(problem)
        return base_url

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
    weight: float = 1.0

    @property
    def deployment(self) -> str:
        """The deployment's name: ``provider/upstream_model``."""
        return f"{self.provider_name}/{self.upstream_model}"


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
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    _routes: dict[str, list[Route]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _providers_exist(self) -> GatewayConfig:
        problems = [
            f"models.{name}.{'provider' if route.provider else 'deployments'}: "
            f"unknown provider {target.provider!r}"
            for name, route in self.models.items()
            for target in route.targets(name)
            if target.provider not in self.providers
        ]
        problems += [
            f"models.{name}.{key}: unknown model {other!r}"
            for name, route in self.models.items()
            for key, others in (
                ("fallbacks", route.fallbacks),
                ("context_window_fallbacks", route.context_window_fallbacks),
            )
            for other in others
            if other not in self.models
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
        """Return where ``model`` goes first, or ``None`` if nothing routes it."""
        routes = self.routes(model)
        return routes[0] if routes else None

    def routes(self, model: str) -> list[Route]:
        """Every deployment of ``model``, in the configured order (none if not routed).

        A listed model's routes are made once (a configuration does not change); a name
        sent to ``default_provider`` gets one made for it, as clients choose those names.
        """
        made = self._routes.get(model)
        if made is not None:
            return made
        listed = self.models.get(model)
        if listed is not None:
            made = self._routes[model] = [
                Route(
                    provider_name=target.provider,
                    provider=self.providers[target.provider],
                    upstream_model=target.upstream_model or model,
                    context_window=listed.context_window,
                    max_output_tokens=listed.max_output_tokens,
                    thinking=listed.thinking,
                    prompt_cache=listed.prompt_cache,
                    weight=target.weight,
                )
                for target in listed.targets(model)
            ]
            return made
        if self.default_provider is not None:
            name = self.default_provider
            return [Route(provider_name=name, provider=self.providers[name], upstream_model=model)]
        return []


def substitute_env(
    value: Any, env: Mapping[str, str], path: str = "", unset: list[str] | None = None
) -> tuple[Any, list[str]]:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string; report unset variables
    (and add the key paths holding them to ``unset``)."""
    problems: list[str] = []
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            result[key], found = substitute_env(child, env, child_path, unset)
            problems += found
        return result, problems
    if isinstance(value, list):
        items = []
        for index, child in enumerate(value):
            item, found = substitute_env(child, env, f"{path}[{index}]", unset)
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
        if unset is not None:
            unset.append(path)
        return ""

    return _ENV_REFERENCE.sub(replace, value), problems


def key_path(loc: tuple[int | str, ...]) -> str:
    """``auth.keys[0].key``: list indexes in brackets, as in :func:`substitute_env`'s paths."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def _message(detail: ErrorDetails) -> str:
    if detail["type"] == "extra_forbidden":
        return "unknown key"
    if detail["type"] == "missing":
        return "required"
    return detail["msg"].removeprefix("Value error, ")


def _follows_from_unset(path: str, message: str, unset: list[str]) -> bool:
    """Whether the error at ``path`` is only the empty value an unset variable left there
    (on the key itself, or on the section holding it and naming the key)."""
    return any(
        name == path or (path and name.startswith(f"{path}.") and name[len(path) + 1 :] in message)
        for name in unset
    )


def _describe(errors: list[ErrorDetails], unset: list[str]) -> list[str]:
    lines = []
    for detail in errors:
        path, message = key_path(detail["loc"]), _message(detail)
        if _follows_from_unset(path, message, unset):
            continue
        if path:
            lines.append(f"{path}: {message}")
        else:  # the whole configuration's checks name their keys, several joined by "; "
            lines += _JOINED.split(message)
    return lines


_JOINED = re.compile(r"; (?=\S+: )")  # "; " before the next problem's key path
_STAND_IN: dict[str, Any] = {"wire_api": "echo"}
Section = TypeVar("Section", bound=BaseModel)


def _set_aside(document: dict[str, Any], loc: tuple[int | str, ...], missing: bool) -> bool:
    """Take what ``loc`` names (or the nearest thing holding it) out of ``document``, so that
    the rest can be checked; a provider or model is replaced by a stand-in instead, so that
    references to it still resolve. ``False`` when nothing meaningful would be left."""
    parts = list(loc[:-1] if missing else loc)
    while parts:
        if parts[0] in ("providers", "models") and len(parts) <= 2:
            return len(parts) == 2 and _stand_in(document, str(parts[0]), parts[1])
        holder: Any = document
        for part in parts[:-1]:
            holder = _child(holder, part)
        if _holds(holder, parts[-1]):
            del holder[parts[-1]]
            return True
        parts.pop()
    return False


def _holds(holder: Any, part: int | str) -> bool:
    if isinstance(holder, dict):
        return part in holder
    return isinstance(holder, list) and isinstance(part, int) and part < len(holder)


def _child(holder: Any, part: int | str) -> Any:
    return holder[part] if _holds(holder, part) else None


def _stand_in(document: dict[str, Any], section: str, name: int | str) -> bool:
    entries = document.get(section)
    providers = document.get("providers", {"echo": _STAND_IN})
    if not isinstance(entries, dict) or not isinstance(providers, dict) or not providers:
        return False
    entries[name] = (
        dict(_STAND_IN) if section == "providers" else {"provider": next(iter(providers))}
    )
    return True


def _cross_checks(document: dict[str, Any], errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """The whole configuration's own checks (references between sections, exposure), run on
    what is left once the parts with errors are set aside: they would otherwise show only
    once every other error is fixed."""
    for _ in range(8):  # each round sets aside what the previous one found
        for detail in errors:
            missing = detail["type"] == "missing"
            if detail["loc"] and not _set_aside(document, detail["loc"], missing):
                return []
        try:
            GatewayConfig.model_validate(document)
            return []
        except ValidationError as error:
            errors = error.errors()
        if all(not detail["loc"] for detail in errors):
            return errors
    return []


def _valid_section(model: type[Section], value: Any) -> Section | None:
    try:
        return model.model_validate({} if value is None else value)
    except ValidationError:
        return None


def parse_config(raw: Any, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Validate an already-loaded YAML document; raise :class:`ConfigError` on any problem.

    Every problem is reported at once, with its key path (``auth.keys[0].key``); a value
    left empty by an unset variable is reported once, as that.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(["(top level): the configuration must be a mapping"])
    unset: list[str] = []
    substituted, problems = substitute_env(raw, os.environ if env is None else env, "", unset)
    try:
        config = GatewayConfig.model_validate(substituted)
    except ValidationError as error:
        errors = error.errors()
        if any(detail["loc"] for detail in errors):
            errors += _cross_checks(copy.deepcopy(substituted), errors)
        problems += _describe(errors, unset)
    if problems:
        raise ConfigError(
            problems,
            server=_valid_section(ServerSettings, substituted.get("server")),
            session=_valid_section(SessionSettings, substituted.get("session")),
        )
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
