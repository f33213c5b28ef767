"""Statements, the operations that yield them, and the drivers that run an operation.

An operation is a generator: it yields :class:`Statement` objects and receives each
one's rows (``rows``), row count (``run``) or nothing (``run_many``), so one body of
logic runs under a synchronous driver (sqlite3) and an asynchronous one (psycopg),
inside the transaction the caller holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from .dialect import POSTGRES

Params = Mapping[str, Any]


class Statement(NamedTuple):
    """One statement with ``:name`` placeholders and what the operation wants back."""

    sql: str
    params: Params | Sequence[Params]
    result: Literal["rows", "count", "many"]


T = TypeVar("T")
Returning = Generator[Statement, Any, T]
"""An operation whose result is a ``T``."""
Operation = Generator[Statement, Any, Any]


def rows(sql: str, /, **params: Any) -> Statement:
    """A statement whose rows the operation receives."""
    return Statement(sql, params, "rows")


def run(sql: str, /, **params: Any) -> Statement:
    """A statement whose row count the operation receives."""
    return Statement(sql, params, "count")


def run_many(sql: str, batch: Sequence[Params]) -> Statement:
    """One statement run once for each parameter set of ``batch``."""
    return Statement(sql, batch, "many")


def in_list(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """Placeholders ``:name0, :name1, ...`` for an ``IN (...)`` list, and their values."""
    params = {f"{name}{n}": value for n, value in enumerate(values)}
    return ", ".join(f":{key}" for key in params), params


def drive(conn: sqlite3.Connection, operation: Operation) -> Any:
    """Run ``operation`` on a SQLite connection (the caller holds the transaction)."""
    try:
        sql, params, wanted = next(operation)
        while True:
            if wanted == "rows":
                result: Any = conn.execute(sql, params).fetchall()
            elif wanted == "count":
                result = conn.execute(sql, params).rowcount
            else:
                conn.executemany(sql, params)
                result = None
            sql, params, wanted = operation.send(result)
    except StopIteration as done:
        return done.value


async def drive_async(conn: Any, operation: Operation) -> Any:
    """Run ``operation`` on a psycopg connection (the caller holds the transaction)."""
    try:
        sql, params, wanted = next(operation)
        while True:
            rendered = POSTGRES.render(sql)
            if wanted == "many":
                async with conn.cursor() as cursor:
                    await cursor.executemany(rendered, params)
                result: Any = None
            else:
                cursor = await conn.execute(rendered, params)
                result = await cursor.fetchall() if wanted == "rows" else cursor.rowcount
            sql, params, wanted = operation.send(result)
    except StopIteration as done:
        return done.value
