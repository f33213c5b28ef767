"""``POST /v1/embeddings``: its body, validated as OpenAI validates it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...errors import invalid_request

MAX_INPUTS = 2048


class EmbeddingsBody(BaseModel):
    """What a client asks to be embedded (any other field is ignored, as OpenAI's)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    model: str = Field(min_length=1)
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None

    @field_validator("input")
    @classmethod
    def _not_empty(
        cls, value: str | list[str] | list[int] | list[list[int]]
    ) -> str | list[str] | list[int] | list[list[int]]:
        if isinstance(value, str):
            if not value:
                raise invalid_request(
                    "'$.input' is invalid: the input must not be empty.", param="input"
                )
            return value
        if not value or len(value) > MAX_INPUTS:
            raise invalid_request(
                f"'$.input' is invalid: expected from 1 to {MAX_INPUTS} inputs.", param="input"
            )
        if any(isinstance(v, str | list) and not v for v in value):
            raise invalid_request(
                "'$.input' is invalid: an input must not be empty.", param="input"
            )
        return value
