"""Managed API keys: only a SHA-256 hash of each secret is ever stored."""

from __future__ import annotations

import hashlib
import secrets
import time

from pydantic import BaseModel, ConfigDict, Field

from .ids import new_id

SECRET_PREFIX = "sk-gw-"


class ApiKey(BaseModel):
    """A key as stored: its public id, its project, and the hash of its secret."""

    model_config = ConfigDict(extra="forbid")

    id: str
    project: str
    name: str | None = None
    secret_hash: str
    created_at: float = Field(default_factory=time.time)
    revoked_at: float | None = None
    requests_per_minute: int | None = Field(default=None, ge=1)
    budget_usd: float | None = Field(default=None, gt=0)  # per calendar month (UTC)
    budget_tokens: int | None = Field(default=None, ge=1)  # per calendar month (UTC)


def hash_secret(secret: str) -> str:
    """The stored form of a secret (a high-entropy secret needs no slow hash)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def new_key(
    project: str,
    *,
    name: str | None = None,
    requests_per_minute: int | None = None,
    budget_usd: float | None = None,
    budget_tokens: int | None = None,
) -> tuple[ApiKey, str]:
    """A fresh key and its secret; the secret exists only in what this returns."""
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        id=new_id("key")[:28],
        project=project,
        name=name,
        secret_hash=hash_secret(secret),
        requests_per_minute=requests_per_minute,
        budget_usd=budget_usd,
        budget_tokens=budget_tokens,
    )
    return key, secret


def key_from_row(row: tuple[object, ...]) -> ApiKey:
    """A key from :data:`KEY_COLUMNS`."""
    names = ApiKey.model_fields
    return ApiKey.model_validate(dict(zip(names, row, strict=True)))


KEY_COLUMNS = ", ".join(ApiKey.model_fields)
