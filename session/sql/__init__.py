"""SQL written once for SQLite and PostgreSQL: statements, operations and their drivers.

A statement names its parameters (``:name``); :class:`Dialect` renders it for a driver
(sqlite3 takes it as written, psycopg as ``%(name)s``) and spells the few things the two
databases write differently. An operation is a generator of statements: the same body
runs under :func:`drive` (sqlite3, synchronous) and :func:`drive_async` (psycopg).
"""

from .dialect import BYTEWISE, POSTGRES, SQLITE, Dialect
from .statement import (
    Operation,
    Returning,
    Statement,
    drive,
    drive_async,
    in_list,
    rows,
    run,
    run_many,
)

__all__ = [
    "BYTEWISE",
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "Operation",
    "Returning",
    "Statement",
    "drive",
    "drive_async",
    "in_list",
    "rows",
    "run",
    "run_many",
]
