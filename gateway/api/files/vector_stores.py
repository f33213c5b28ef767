"""The bodies of the Vector Stores API, validated as OpenAI validates them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...errors import invalid_request

MAX_ATTRIBUTES = 16


class ExpiresAfter(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    anchor: Literal["last_active_at"]
    days: int = Field(ge=1, le=365)


class CreateVectorStoreBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    name: str | None = Field(default=None, max_length=256)
    file_ids: list[str] = Field(default_factory=list, max_length=500)
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    expires_after: ExpiresAfter | None = None
    chunking_strategy: dict[str, Any] | None = None
    description: str | None = None


class UpdateVectorStoreBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    name: str | None = Field(default=None, max_length=256)
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    expires_after: ExpiresAfter | None = None


class AttachFileBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    file_id: str = Field(min_length=1)
    attributes: dict[str, str | float | bool] | None = None
    chunking_strategy: dict[str, Any] | None = None


class BatchFile(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    file_id: str = Field(min_length=1)
    attributes: dict[str, str | float | bool] | None = None
    chunking_strategy: dict[str, Any] | None = None


class CreateBatchBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    file_ids: list[str] | None = Field(default=None, min_length=1, max_length=500)
    files: list[BatchFile] | None = Field(default=None, min_length=1, max_length=500)
    attributes: dict[str, str | float | bool] | None = None
    chunking_strategy: dict[str, Any] | None = None


class SearchBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    query: str | list[str]
    filters: dict[str, Any] | None = None
    max_num_results: int | None = None
    ranking_options: dict[str, Any] | None = None
    rewrite_query: bool = False


def check_attributes(
    attributes: dict[str, Any] | None, param: str = "attributes"
) -> dict[str, Any]:
    """A file's attributes as OpenAI bounds them: 16 keys of 64 characters, texts of 512."""
    if attributes is None:
        return {}
    if len(attributes) > MAX_ATTRIBUTES:
        raise invalid_request(
            f"Invalid '{param}': at most {MAX_ATTRIBUTES} attributes.", param=param
        )
    for key, value in attributes.items():
        if len(key) > 64 or (isinstance(value, str) and len(value) > 512):
            raise invalid_request(
                f"Invalid '{param}.{key[:64]}': keys are at most 64 characters, texts 512.",
                param=f"{param}.{key[:64]}",
            )
    return dict(attributes)
