"""``config.yaml``'s routing keys: deployments and keys to spread over, retries, fallbacks,
cooldowns, and prices."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderKey(_Section):
    """One of a provider's API keys (``providers.NAME.api_keys``)."""

    key: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)
    requests_per_minute: int | None = Field(default=None, ge=1)


class Deployment(_Section):
    """One place a model may go (``models.NAME.deployments``)."""

    provider: str
    upstream_model: str | None = None
    weight: float = Field(default=1.0, gt=0)


class RetrySettings(_Section):
    """How many calls a turn may make before its first output (by default one per
    deployment and key: a single one tries once, as without routing), and how long it
    may wait between them in all."""

    attempts: int | None = Field(default=None, ge=1, le=20)
    max_wait_seconds: float = Field(default=30.0, ge=0)


class Pricing(_Section):
    """USD per million tokens; ``cached_input`` and ``cache_write`` default to ``input``."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)

    def cost(self, usage: dict[str, Any]) -> float:
        """What a Responses ``usage`` costs, in USD (its input counts cache reads and
        writes; they are priced apart)."""
        details = usage.get("input_tokens_details") or {}
        cached = _count(details.get("cached_tokens"))
        written = _count(details.get("cache_write_tokens"))
        fresh = max(0, _count(usage.get("input_tokens")) - cached - written)
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = self.input if self.cache_write is None else self.cache_write
        total = (
            fresh * self.input
            + cached * cached_price
            + written * write_price
            + _count(usage.get("output_tokens")) * self.output
        )
        return total / 1_000_000


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


class CooldownSettings(_Section):
    """A deployment or key that fails ``allowed_fails`` times within ``window_seconds``
    rests ``seconds``, doubled on each repeat up to ``max_seconds``."""

    allowed_fails: int = Field(default=3, ge=1)
    window_seconds: float = Field(default=60.0, gt=0)
    seconds: float = Field(default=5.0, ge=0)
    max_seconds: float = Field(default=300.0, ge=0)


class RoutingSettings(_Section):
    cooldown: CooldownSettings = Field(default_factory=CooldownSettings)
    redis_url: str | None = None
    # A chain, conversation or prompt_cache_key goes where its prompt cache is (soft).
    affinity: bool = True
    affinity_idle_seconds: float = Field(default=3600.0, gt=0)
