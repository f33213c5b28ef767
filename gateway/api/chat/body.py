"""Validation of ``POST /v1/chat/completions`` bodies, errors naming Chat's own params."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...errors import invalid_request
from ..request_body import check_metadata, validate_body
from .choices import MAX_CHOICES


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    include_usage: bool = False
    include_obfuscation: bool | None = None


class ChatCompletionBody(BaseModel):
    """The fields the gateway reads of a Chat Completions request; any other top-level
    field is kept and passed on to the turn as it came."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    messages: list[Any] = Field(min_length=1)
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    stop: str | list[str] | None = None
    seed: int | None = None
    logit_bias: dict[str, int] | None = None
    user: str | None = Field(default=None, max_length=256)
    safety_identifier: str | None = Field(default=None, max_length=64)
    prompt_cache_key: str | None = Field(default=None, max_length=1024)
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority"] | None = None
    verbosity: Literal["low", "medium", "high"] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    n: int | None = Field(default=None, ge=1, le=128)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    modalities: list[str] | None = None

    _metadata = field_validator("metadata")(check_metadata)

    @field_validator("stop")
    @classmethod
    def _stop(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > 4:
            raise ValueError("at most 4 stop sequences")
        return value


# Chat fields no wire of the gateway carries: a 400 naming them, never dropped.
_REFUSED = ("audio", "prediction", "functions", "function_call", "web_search_options")


def parse_chat_body(raw: bytes) -> ChatCompletionBody:
    """Validate a Chat Completions body; raise a 400 naming the first bad param."""
    body = validate_body(ChatCompletionBody, raw)
    extra = body.model_extra or {}
    for name in _REFUSED:
        if extra.get(name) is not None:
            raise invalid_request(
                f"'{name}' is not supported by this gateway's Chat Completions API.",
                param=name,
                code="unsupported_parameter",
            )
    if body.modalities is not None and any(m != "text" for m in body.modalities):
        raise invalid_request(
            "Only the 'text' modality is supported.", param="modalities", code="unsupported_value"
        )
    if body.n is not None and body.n > MAX_CHOICES:
        raise invalid_request(
            f"'n' is at most {MAX_CHOICES}: each choice is a turn of its own, run at once.",
            param="n",
            code="unsupported_value",
        )
    if body.top_logprobs and not body.logprobs:
        raise invalid_request(
            "'top_logprobs' needs 'logprobs' set to true.",
            param="top_logprobs",
            code="invalid_value",
        )
    if body.stream_options is not None and not body.stream:
        raise invalid_request(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            param="stream_options",
            code="invalid_value",
        )
    return body
