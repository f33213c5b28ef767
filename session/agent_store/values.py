"""The values the agent Store's operations take and keep: the limits and checks of their
arguments (ids, keys, labels, metadata, 64-bit integers), JSON as stored, and a message
read back from its row. The operations themselves are generators of statements (see
:mod:`session.sql`) that SQLite and PostgreSQL both run."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from .errors import bad_request
from .models import Message

MAX_ID_BYTES = 256
# A framework adapter's key string: with the others of its row, one PostgreSQL index entry
# (at most about 2,700 bytes) holds them all.
MAX_KEY_BYTES = 512
MAX_BATCH = 100
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1
Int64 = Annotated[int, Field(ge=BIGINT_MIN, le=BIGINT_MAX)]
"""An integer a ``BIGINT`` column holds (an argument's type, checked before use)."""
MESSAGE_COLUMNS = "id, conversation_id, seq, role, type, payload, metadata, created_at, updated_at"


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def storable(value: str) -> bool:
    """Whether both databases store ``value`` as given: UTF-8, without NUL characters."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def check_id(value: Any, param: str) -> str:
    """``value`` if it is an id both databases store alike; else a BadRequest naming ``param``."""
    if (
        not isinstance(value, str)
        or not value
        or not storable(value)
        or len(value.encode()) > MAX_ID_BYTES
    ):
        raise bad_request(
            f"Invalid '{param}': a non-empty string of at most {MAX_ID_BYTES} bytes,"
            " without NUL characters.",
            param,
        )
    return value


def check_key(value: Any, param: str, *, empty: bool = False) -> str:
    """A key string of a framework adapter (an id, a namespace, a path): BadRequest unless
    both databases store and index it alike."""
    if (
        not isinstance(value, str)
        or (not value and not empty)
        or not storable(value)
        or len(value.encode()) > MAX_KEY_BYTES
    ):
        raise bad_request(
            f"Invalid '{param}': a {'' if empty else 'non-empty '}string of at most"
            f" {MAX_KEY_BYTES} bytes, without NUL characters.",
            param,
        )
    return value


def check_label(value: Any, param: str) -> str | None:
    """A message's ``role`` or ``type``: a string without NUL characters, or ``None``."""
    if value is not None and (not isinstance(value, str) or not storable(value)):
        raise bad_request(f"Invalid '{param}': a string without NUL characters, or null.", param)
    return value


def check_metadata(value: Any, param: str = "metadata") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad_request(f"Invalid '{param}': a JSON object.", param)
    return value


def message_of(row: tuple[Any, ...]) -> Message:
    return Message(
        message_id=row[0],
        conversation_id=row[1],
        seq=int(row[2]),
        role=row[3],
        type=row[4],
        payload=json.loads(row[5]),
        metadata=json.loads(row[6]),
        created_at=float(row[7]),
        updated_at=float(row[8]),
    )
