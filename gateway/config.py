"""``config.yaml``: its schema, ``${ENV_VAR}`` substitution and model routing."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from session import SessionSettings

from .auth_settings import AuthSettings
from .config_problems import YamlProblem, describe, in_file_order, key_path, read_yaml
from .config_sections import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_THINKING_BUDGETS,
    LOOPBACK_HOSTS,
    CodexModelSettings,
    CompactionSettings,
    Effort,
    McpServerSettings,
    McpSettings,
    ModelRoute,
    ProviderSettings,
    Route,
    ServerSettings,
    ThinkingSettings,
    host_problem,
    resolved_workers,
    url_problem,
)
from .file_search_settings import FileSearchSettings
from .observability_settings import ObservabilitySettings
from .routing_settings import RoutingSettings
from .web_search_settings import WebSearchSettings
from .wire_settings import ANTHROPIC_BASE_URL, WIRES, Wire, WireApi

__all__ = [
    "ANTHROPIC_BASE_URL",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_THINKING_BUDGETS",
    "LOOPBACK_HOSTS",
    "WIRES",
    "CodexModelSettings",
    "CompactionSettings",
    "ConfigError",
    "Effort",
    "GatewayConfig",
    "McpServerSettings",
    "McpSettings",
    "ModelRoute",
    "ProviderSettings",
    "Route",
    "ServerSettings",
    "ThinkingSettings",
    "Wire",
    "WireApi",
    "host_problem",
    "key_path",
    "load_config",
    "parse_config",
    "substitute_env",
    "url_problem",
]

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


DEFAULT_ROUTES_KEPT = 256
KEYS = ("server", "session")


class GatewayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
    mcp: McpSettings = Field(default_factory=McpSettings)
    web_search: WebSearchSettings = Field(default_factory=WebSearchSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    file_search: FileSearchSettings = Field(default_factory=FileSearchSettings)
    _routes: dict[str, list[Route]] = PrivateAttr(default_factory=dict)
    # The routes made for names sent to ``default_provider``, the most recent few.
    _default_routes: dict[tuple[str, str], list[Route]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _auto_workers(cls, data: Any) -> Any:
        """``server.workers: auto`` knows the store here: one worker on the memory store."""
        server, session = (data.get(key) if isinstance(data, dict) else None for key in KEYS)
        if isinstance(server, dict) and server.get("workers") == "auto":
            backend = session.get("backend", "sqlite") if isinstance(session, dict) else None
            data = {**data, "server": {**server, "workers": resolved_workers("auto", backend)}}
        return data

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
        embeddings = self.file_search.embeddings_model
        if embeddings is not None and embeddings not in self.models and not self.default_provider:
            problems.append(f"file_search.embeddings_model: unknown model {embeddings!r}")
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
        sent to ``default_provider`` gets one made for it, kept among the last
        ``DEFAULT_ROUTES_KEPT`` such names, as clients choose those names (a turn asks for
        its routes several times).
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
                    sampling=listed.sampling,
                    weight=target.weight,
                )
                for target in listed.targets(model)
            ]
            return made
        if self.default_provider is not None:
            name, kept = self.default_provider, self._default_routes
            provider = self.providers[name]
            made = kept.get((name, model))
            if made is not None and made[0].provider is provider:
                return made
            if len(kept) >= DEFAULT_ROUTES_KEPT:
                del kept[next(iter(kept))]
            made = kept[name, model] = [
                Route(provider_name=name, provider=provider, upstream_model=model)
            ]
            return made
        return []

    def fallback_order(self, model: str, *, context_window: bool = False) -> list[str]:
        """``model``, then its fallbacks (and with ``context_window`` its context-window
        fallbacks), then theirs, breadth first, each once."""
        order: list[str] = []
        queue = [model]
        while queue:
            name = queue.pop(0)
            if name in order:
                continue
            order.append(name)
            listed = self.models.get(name)
            if listed is not None:
                queue += listed.fallbacks
                queue += listed.context_window_fallbacks if context_window else []
        return order


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
        problems += describe(errors, unset, GatewayConfig)
    if problems:
        raise ConfigError(
            problems,
            server=_valid_section(ServerSettings, substituted.get("server")),
            session=_valid_section(SessionSettings, substituted.get("session")),
        )
    return config


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read and validate ``config.yaml``; raise :class:`ConfigError` on any problem, the
    problems in the order of the lines they are on."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError([f"{path}: cannot read ({error.strerror})"]) from None
    try:
        raw, lines = read_yaml(text, path)
    except YamlProblem as problem:
        raise ConfigError([str(problem)]) from None
    try:
        return parse_config(raw, env)
    except ConfigError as error:
        ordered = in_file_order(error.problems, lines)
        raise ConfigError(ordered, server=error.server, session=error.session) from None
