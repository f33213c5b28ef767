"""Statements written once run alike on SQLite and PostgreSQL: named placeholders, a
literal ``%`` or ``?``, and PostgreSQL's own ``?`` operator."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from session.sql import POSTGRES, SQLITE, Returning, drive, drive_async, rows

pytestmark = [pytest.mark.contract]

TRICKY = (
    "SELECT :word || '%', '50% of :word?', CAST(:none AS TEXT) IS NULL, 7 % 2 AS \"odd%\", :word"
)


def tricky() -> Returning[list[tuple[object, ...]]]:
    found: list[tuple[object, ...]] = yield rows(TRICKY, word="it's", none=None)
    return found


def test_sqlite_takes_a_statement_as_written() -> None:
    assert SQLITE.render(TRICKY) == TRICKY


def test_psycopg_gets_its_placeholders_and_literal_percent_signs_doubled() -> None:
    assert POSTGRES.render(TRICKY) == (
        "SELECT %(word)s || '%%', '50%% of :word?', CAST(%(none)s AS TEXT) IS NULL,"
        ' 7 %% 2 AS "odd%%", %(word)s'
    )
    assert POSTGRES.render("SELECT :id::text, x COLLATE BINARY") == (
        'SELECT %(id)s::text, x COLLATE "C"'
    )


EXPECTED = [("it's%", "50% of :word?", 1, 1, "it's")]


def test_one_statement_reads_the_same_through_sqlite() -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        assert drive(conn, tricky()) == EXPECTED


@pytest.mark.anyio
async def test_one_statement_reads_the_same_through_psycopg(postgres_dsn: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres_dsn) as conn:
        found = await drive_async(conn, tricky())
        assert [(a, b, int(c), d, e) for a, b, c, d, e in found] == EXPECTED

        def contains() -> Returning[list[tuple[object, ...]]]:
            result: list[tuple[object, ...]] = yield rows(
                "SELECT CAST(:document AS jsonb) ? 'a', CAST(:document AS jsonb) ? 'b'",
                document='{"a": 1}',
            )
            return result

        assert await drive_async(conn, contains()) == [(True, False)]
