"""Managed API keys and shared secrets, kept in process (the memory store's)."""

from __future__ import annotations

import time

from .errors import KeyNotFound
from .keys import ApiKey


class MemoryKeys:
    """Keys kept serialised, so callers changing what they read change nothing."""

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}  # key id -> JSON
        self._secrets: dict[str, str] = {}

    async def shared_secret(self, name: str, candidate: str) -> str:
        return self._secrets.setdefault(name, candidate)

    async def create_key(self, key: ApiKey) -> None:
        self._keys[key.id] = key.model_dump_json()

    async def find_key(self, secret_hash: str) -> ApiKey | None:
        keys = (ApiKey.model_validate_json(key) for key in self._keys.values())
        return next((key for key in keys if key.secret_hash == secret_hash), None)

    async def list_keys(self, project: str | None = None) -> list[ApiKey]:
        keys = [ApiKey.model_validate_json(key) for key in self._keys.values()]
        return [key for key in keys if project is None or key.project == project]

    async def revoke_key(self, key_id: str) -> ApiKey:
        if key_id not in self._keys:
            raise KeyNotFound(key_id)
        key = ApiKey.model_validate_json(self._keys[key_id])
        if key.revoked_at is None:
            key = key.model_copy(update={"revoked_at": time.time()})
            self._keys[key_id] = key.model_dump_json()
        return key
