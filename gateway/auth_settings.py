"""The ``auth:`` section of ``config.yaml``: who may call the gateway, for which project."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

ProjectName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
Secret = Annotated[str, StringConstraints(min_length=16, max_length=512)]


class StaticKey(BaseModel):
    """A key written in the configuration (usually as ``${ENV_VAR}``)."""

    model_config = ConfigDict(extra="forbid")

    key: Secret
    project: ProjectName
    name: str | None = None
    requests_per_minute: int | None = Field(default=None, ge=1)
    budget_usd: float | None = Field(default=None, gt=0)  # per calendar month (UTC)
    budget_tokens: int | None = Field(default=None, ge=1)  # per calendar month (UTC)


class AuthSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["none", "keys"] = "none"
    keys: list[StaticKey] = Field(default_factory=list)
    admin_key: Secret | None = None
    cache_seconds: float = Field(default=5.0, ge=0, le=300)
    # How long a console login lasts: from a minute to 30 days (8 hours: a working day).
    console_session_seconds: float = Field(default=8 * 3600.0, ge=60, le=30 * 86400)
    # Projects whose exchanges on /v1/messages and /v1/chat/completions keep their usage
    # and cost only, not their content.
    unstored_projects: list[ProjectName] = Field(default_factory=list)

    @model_validator(mode="after")
    def _distinct_keys(self) -> AuthSettings:
        secrets = [entry.key for entry in self.keys]
        if len(set(secrets)) != len(secrets):
            raise ValueError("the same key is listed twice in auth.keys")
        if self.admin_key is not None and self.admin_key in secrets:
            raise ValueError("auth.admin_key must differ from every key in auth.keys")
        return self
