"""The benchmarks run end to end on tiny loads, so they cannot rot unnoticed."""

from __future__ import annotations

import os

import pytest

from bench import overhead, storage

from .conftest import POSTGRES_DSN_VARIABLE


@pytest.mark.anyio
async def test_the_storage_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    dsn = os.environ.get(POSTGRES_DSN_VARIABLE)
    await storage.main([5, 10], 1, dsn)
    table = capsys.readouterr().out
    backends = ["memory", "sqlite", *(["postgres"] if dsn else [])]
    for backend in backends:
        assert sum(line.startswith(backend) for line in table.splitlines()) == 2


@pytest.mark.anyio
async def test_the_overhead_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    await overhead.run(requests=6, concurrency=2, depths=[1])
    assert "gateway" in capsys.readouterr().out
