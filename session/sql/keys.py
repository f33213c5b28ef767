"""Managed API keys and the secrets instances share, as operations."""

from __future__ import annotations

from ..errors import KeyNotFound
from ..keys import KEY_COLUMNS, ApiKey, key_from_row
from .statement import Returning, rows, run

_VALUES = ", ".join(f":{name}" for name in ApiKey.model_fields)


def insert_key(key: ApiKey) -> Returning[None]:
    yield run(f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES ({_VALUES})", **key.model_dump())


def find_key(secret_hash: str) -> Returning[ApiKey | None]:
    found = yield rows(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_hash = :secret_hash",
        secret_hash=secret_hash,
    )
    return key_from_row(found[0]) if found else None


def list_keys(project: str | None) -> Returning[list[ApiKey]]:
    found = yield rows(
        f"SELECT {KEY_COLUMNS} FROM api_keys"
        " WHERE CAST(:project AS TEXT) IS NULL OR project = :project ORDER BY created_at, id",
        project=project,
    )
    return [key_from_row(row) for row in found]


def revoke_key(key_id: str, now: float) -> Returning[ApiKey]:
    yield run(
        "UPDATE api_keys SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL",
        now=now,
        id=key_id,
    )
    found = yield rows(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = :id", id=key_id)
    if not found:
        raise KeyNotFound(key_id)
    return key_from_row(found[0])


def shared_secret(name: str, candidate: str) -> Returning[str]:
    """The secret stored as ``name``; ``candidate`` becomes it if none is stored yet."""
    yield run(
        "INSERT INTO gateway_secrets (name, value) VALUES (:name, :value) ON CONFLICT DO NOTHING",
        name=name,
        value=candidate,
    )
    found = yield rows("SELECT value FROM gateway_secrets WHERE name = :name", name=name)
    return str(found[0][0])
