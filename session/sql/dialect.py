"""Where SQLite and PostgreSQL differ: placeholders, JSON, row locators, locking."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

BYTEWISE = "COLLATE BINARY"
"""Compares text bytewise; PostgreSQL spells it ``COLLATE "C"``."""

# Quoted text first, so that nothing inside a literal or a quoted name is rewritten; a
# placeholder's colon follows neither a word nor another colon (``::text`` is a cast).
_TOKENS = re.compile(
    r"""('(?:[^']|'')*')|("(?:[^"]|"")*")|(?<![:\w]):([A-Za-z_]\w*)|(%)|(COLLATE BINARY)"""
)


def _psycopg_token(match: re.Match[str]) -> str:
    quoted = match.group(1) or match.group(2)
    if quoted is not None:
        return quoted.replace("%", "%%")
    if match.group(3) is not None:
        return f"%({match.group(3)})s"
    if match.group(4) is not None:
        return "%%"
    return 'COLLATE "C"'


@dataclass(frozen=True)
class Dialect:
    """How one database spells what a statement means."""

    postgres: bool

    def render(self, sql: str) -> str:
        """``sql`` (``:name`` placeholders) as this database's driver takes it."""
        if not self.postgres:
            return sql
        return _TOKENS.sub(_psycopg_token, sql)

    @property
    def row_locator(self) -> str:
        """The hidden column that names a row within its table."""
        return "ctid" if self.postgres else "rowid"

    @property
    def for_update(self) -> str:
        """Locks the rows a query reads (SQLite's writer holds the whole file already)."""
        return " FOR UPDATE" if self.postgres else ""

    @property
    def skip_locked(self) -> str:
        """Locks the rows a query reads, passing over those another transaction holds."""
        return " FOR UPDATE SKIP LOCKED" if self.postgres else ""

    def json_text(self, column: str, *path: str) -> str:
        """The value at ``path`` in a JSON column, as SQL text or number."""
        if self.postgres:
            return f"{column} #>> '{{{','.join(path)}}}'"
        return f"json_extract({column}, '$.{'.'.join(path)}')"

    def json_integer(self, column: str, *path: str) -> str:
        """The integer at ``path`` in a JSON column."""
        if self.postgres:
            return f"({self.json_text(column, *path)})::bigint"
        return self.json_text(column, *path)

    def json_real(self, column: str, *path: str) -> str:
        """The number at ``path`` in a JSON column, as a floating-point value."""
        if self.postgres:
            return f"({self.json_text(column, *path)})::double precision"
        return self.json_text(column, *path)

    def json_replaced(self, column: str, key: str, value: str) -> str:
        """A JSON column's value with ``key`` set to the JSON parameter ``value``."""
        if self.postgres:
            return f"jsonb_set({column}, '{{{key}}}', {value})"
        return f"json_set({column}, '$.{key}', json({value}))"

    def json(self, value: Any) -> Any:
        """``value`` as a parameter for a JSON column (TEXT in SQLite, JSONB in PostgreSQL)."""
        if self.postgres:
            from psycopg.types.json import Jsonb

            return Jsonb(value)
        return json.dumps(value)

    def loads(self, stored: Any) -> Any:
        """A JSON column's value as read: decoded already by psycopg, text in SQLite."""
        return stored if self.postgres else json.loads(stored)


SQLITE = Dialect(postgres=False)
POSTGRES = Dialect(postgres=True)
