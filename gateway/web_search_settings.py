"""``web_search`` in ``config.yaml``: the search backends the gateway queries when it runs
``web_search`` tools for models that cannot search themselves.

Unset (no backends), a ``web_search`` tool stays a 400 on every provider that does not run
it natively. Each backend is tried in turn: one that is down, slow or answers garbage hands
the search to the next.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .config_sections import url_problem

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
TAVILY_URL = "https://api.tavily.com/search"


class _Backend(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("url", check_fields=False)
    @classmethod
    def _http_url(cls, url: str) -> str:
        if (problem := url_problem(url)) is not None:
            raise ValueError(problem.replace("api.deepseek.com/v1", "search.example.com"))
        return url


class SearxngBackend(_Backend):
    """A SearXNG instance with its JSON format enabled: ``GET {url}/search?format=json``."""

    kind: Literal["searxng"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


class BraveBackend(_Backend):
    """Brave's Web Search API: ``GET`` with the ``X-Subscription-Token`` header."""

    kind: Literal["brave"]
    api_key: str = Field(min_length=1)
    url: str = BRAVE_URL


class TavilyBackend(_Backend):
    """Tavily's search: ``POST`` with ``Authorization: Bearer``."""

    kind: Literal["tavily"]
    api_key: str = Field(min_length=1)
    url: str = TAVILY_URL


SearchBackend = Annotated[
    SearxngBackend | BraveBackend | TavilyBackend, Field(discriminator="kind")
]


class WebSearchSettings(BaseModel):
    """The search backends, tried in order, and the limits of one search."""

    model_config = ConfigDict(extra="forbid")

    backends: list[SearchBackend] = Field(default_factory=list)
    timeout_seconds: float = Field(default=10.0, gt=0)
    max_results: int = Field(default=5, ge=1, le=20)
    snippet_chars: int = Field(default=600, ge=50, le=10_000)
    max_turn_seconds: float = Field(default=600.0, gt=0)

    @model_validator(mode="after")
    def _distinct(self) -> WebSearchSettings:
        seen = [(backend.kind, backend.url) for backend in self.backends]
        if len(set(seen)) != len(seen):
            raise ValueError("backends: the same backend is listed twice")
        return self

    @property
    def configured(self) -> bool:
        """Whether the gateway runs ``web_search`` itself (at least one backend)."""
        return bool(self.backends)
