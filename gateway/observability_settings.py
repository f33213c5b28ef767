"""``observability`` in ``config.yaml``: where the gateway sends its traces.

Unset (the default), no tracer provider is built and the request path does no tracing work;
set, spans go over OTLP (HTTP, protobuf) to ``otlp.endpoint``, batched off the request path.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .config_sections import url_problem

TRACES_PATH = "/v1/traces"


class OtlpSettings(BaseModel):
    """An OTLP/HTTP collector (Jaeger, Tempo, Langfuse, Phoenix, an OpenTelemetry Collector)."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str
    protocol: Literal["http/protobuf"] = "http/protobuf"
    headers: dict[str, str] = Field(default_factory=dict)
    service_name: str = Field(default="responses-gateway", min_length=1)
    resource_attributes: dict[str, str] = Field(default_factory=dict)
    sampling_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    capture_content: bool = False
    max_content_chars: int = Field(default=4096, ge=16)
    export_timeout_seconds: float = Field(default=10.0, gt=0)
    max_queue_size: int = Field(default=2048, ge=1)

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if (problem := url_problem(url)) is not None:
            raise ValueError(problem.replace("api.deepseek.com/v1", "collector.example.com:4318"))
        return url

    def traces_url(self) -> str:
        """The URL spans are posted to: ``endpoint`` itself when it names the traces path,
        else the collector's base URL with ``/v1/traces`` appended."""
        if self.endpoint.rstrip("/").endswith(TRACES_PATH):
            return self.endpoint
        return self.endpoint.rstrip("/") + TRACES_PATH


class ObservabilitySettings(BaseModel):
    """The ``observability`` section: ``otlp`` unset, nothing is traced."""

    model_config = ConfigDict(extra="forbid")

    otlp: OtlpSettings | None = None
