"""The wire APIs a provider may speak (``providers.NAME.wire_api``), each as what the
configuration and the transport need to know of it: one entry per wire in :data:`WIRES`.

The adapter that speaks each wire is registered under the same name in
:mod:`gateway.upstream.wires.registry`; a new wire is a package there and an entry in each
table (a test keeps the two tables' names equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

# The names of :data:`WIRES`, as the configuration's schema checks them.
WireApi = Literal["chat_completions", "responses", "anthropic", "echo"]
ANTHROPIC_BASE_URL = "https://api.anthropic.com"


@dataclass(frozen=True)
class Wire:
    """What the gateway knows of one wire API, apart from how it translates."""

    name: str
    http: bool = True  # False: answered in process, no provider to connect to
    default_base_url: str | None = None  # else ``base_url`` is required (when ``http``)
    key_header: str = "Authorization"  # the header a provider key goes in
    key_prefix: str = "Bearer "
    # Headers sent on every request, each from a provider setting (when it is set).
    setting_headers: Mapping[str, str] = field(default_factory=dict)
    # Provider settings only this wire reads (another wire's provider may not set them).
    settings: frozenset[str] = frozenset()
    runs_tools: bool = False  # the upstream runs hosted tools itself (``native_tools``)
    # What the upstream makes (reasoning, compaction) only the account that made it replays.
    account_bound: bool = False
    takes_messages: bool = False  # takes an Anthropic Messages body as a client sent it
    embeddings: bool = False  # the provider serves ``/embeddings`` beside it (OpenAI's shape)
    # Whose API it is: whose prices apply to a provider at a base URL the prices do not know.
    vendor: str | None = None

    def key_headers(self, key: str) -> dict[str, str]:
        """The headers that send ``key``."""
        return {self.key_header: f"{self.key_prefix}{key}"}


WIRES: Mapping[str, Wire] = MappingProxyType(
    {
        "chat_completions": Wire("chat_completions", embeddings=True, vendor="openai"),
        "responses": Wire(
            "responses",
            settings=frozenset({"native_tools"}),
            runs_tools=True,
            account_bound=True,
            embeddings=True,
            vendor="openai",
        ),
        "anthropic": Wire(
            "anthropic",
            default_base_url=ANTHROPIC_BASE_URL,
            key_header="x-api-key",
            key_prefix="",
            setting_headers={
                "anthropic-version": "anthropic_version",
                "anthropic-beta": "anthropic_beta",
            },
            settings=frozenset({"anthropic_version", "anthropic_beta"}),
            takes_messages=True,
            vendor="anthropic",
        ),
        "echo": Wire("echo", http=False),
    }
)


def wires_reading(setting: str) -> list[str]:
    """The wires that read the provider setting ``setting`` (none: every wire reads it)."""
    return [wire.name for wire in WIRES.values() if setting in wire.settings]
