"""What the agent Store's operations are made of, for SQLite and PostgreSQL alike.

Each operation is a generator: it yields ``(sql, params, want_rows)`` statements (``?``
placeholders, SQL both databases speak) and receives each one's rows or row count, so one
body of logic runs under a synchronous driver (SQLite) and an asynchronous one (psycopg),
always inside one transaction.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Generator
from typing import Any

from .errors import bad_request
from .models import Message

Statement = tuple[str, tuple[Any, ...], bool]
Operation = Generator[Statement, Any, Any]

MAX_ID_BYTES = 256
MAX_BATCH = 100
MESSAGE_COLUMNS = "id, conversation_id, seq, role, type, payload, metadata, created_at, updated_at"

# ``{real}`` is the column type of a timestamp: REAL in SQLite, DOUBLE PRECISION in PostgreSQL.
SCHEMA = [
    """CREATE TABLE agent_conversations (
        project TEXT NOT NULL, id TEXT NOT NULL, metadata TEXT NOT NULL,
        created_at {real} NOT NULL, updated_at {real} NOT NULL, next_seq BIGINT NOT NULL,
        PRIMARY KEY (project, id))""",
    "CREATE INDEX agent_conversations_recent ON agent_conversations (project, updated_at, id)",
    """CREATE TABLE agent_messages (
        project TEXT NOT NULL, id TEXT NOT NULL, conversation_id TEXT NOT NULL,
        seq BIGINT NOT NULL, role TEXT, type TEXT, payload TEXT NOT NULL,
        metadata TEXT NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL,
        PRIMARY KEY (project, id))""",
    "CREATE UNIQUE INDEX agent_messages_order ON agent_messages (project, conversation_id, seq)",
    """CREATE TABLE agent_state (
        project TEXT NOT NULL, conversation_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (project, conversation_id, key))""",
    """CREATE TABLE agent_bindings (
        project TEXT NOT NULL, conversation_id TEXT NOT NULL, session_id TEXT NOT NULL,
        PRIMARY KEY (project, conversation_id))""",
]


def ddl(statement: str, *, postgres: bool) -> str:
    """A schema statement for one database: ``{real}`` is a timestamp's type, ``{text}`` text
    that sorts bytewise."""
    if postgres:
        return statement.format(real="DOUBLE PRECISION", text='TEXT COLLATE "C"')
    return statement.format(real="REAL", text="TEXT")


def rows(sql: str, *params: Any) -> Statement:
    return sql, params, True


def run(sql: str, *params: Any) -> Statement:
    return sql, params, False


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check_id(value: str, what: str) -> None:
    if not isinstance(value, str) or not value or len(value.encode()) > MAX_ID_BYTES:
        raise bad_request(f"A {what} is a non-empty string of at most {MAX_ID_BYTES} bytes.")


def check_metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad_request("metadata is a JSON object.")
    return value


def cursor_of(values: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json_text(values).encode()).decode()


def position_of(cursor: str) -> dict[str, Any]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except ValueError:
        raise bad_request("The cursor is not one this store gave out.") from None
    if not isinstance(decoded, dict):
        raise bad_request("The cursor is not one this store gave out.")
    return decoded


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
