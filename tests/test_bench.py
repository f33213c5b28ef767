"""The benchmarks run end to end on tiny loads, so they cannot rot unnoticed."""

from __future__ import annotations

import os
import shutil

import pytest

from bench import compare, edges, search, storage, stream_length, sync_cost, tracing
from bench.syncs import strace_unusable

from .adapter_targets import POSTGRES_DSN_VARIABLE

pytestmark = [pytest.mark.system]


@pytest.mark.anyio
async def test_the_storage_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    dsn = os.environ.get(POSTGRES_DSN_VARIABLE)
    await storage.main([5, 10], 1, dsn)
    table = capsys.readouterr().out
    backends = ["memory", "sqlite", *(["postgres"] if dsn else [])]
    for backend in backends:
        assert sum(line.startswith(backend) for line in table.splitlines()) == 2


@pytest.mark.anyio
async def test_the_search_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    dsn = os.environ.get(POSTGRES_DSN_VARIABLE)
    await search.main([600], 3, dsn)
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["memory", "sqlite", *(["postgres"] if dsn else [])]
    assert all(row.split()[-1] == "1.00" for row in rows)  # the search is exact


@pytest.mark.anyio
async def test_the_search_benchmark_measures_the_index(
    capsys: pytest.CaptureFixture[str], pgvector_base: str
) -> None:
    await search.main([1000], 3, None, pgvector_base)
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["memory", "sqlite", "pgvector"]
    recall = float(rows[-1].split()[-1])  # the HNSW index's, against exact search
    assert 0.8 <= recall <= 1.0


# Its loads run for a fixed 1 s each; starting the servers and seeding a 10,000-turn chain
# take longer the busier the machine is, past the suite's default limit on a loaded one.
@pytest.mark.timeout(900)
def test_the_side_by_side_benchmark_runs() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("bench.compare needs wrk: apt-get install wrk (.ci/run installs it)")
    report = compare.run(seconds=1, dsn=None, godex=None, soak_seconds=0, rounds=2)
    rows = [line for line in report.splitlines() if line.startswith("| ") and "req/s" in line]
    assert len(rows) == len(compare.LOADS)
    assert all("errors" not in row for row in rows), report
    assert "depth 10,000" in report
    assert report.startswith("1 s per load") and "medians of 2 rounds" in report.splitlines()[0]
    assert "write + fdatasync: p50" in report.splitlines()[0]
    assert "gateway (sqlite, synchronous: normal)" in report.splitlines()[1]
    if strace_unusable() is None:
        counts = {
            cells[1]: float(cells[4])
            for line in report.splitlines()
            if len(cells := [c.strip() for c in line.split("|")]) == 6 and "≈" in cells[2]
        }
        assert counts["direct upstream"] == 0
        assert counts["gateway (sqlite)"] > 0  # durable commits sync
        assert counts["gateway (memory)"] == 0
    else:
        assert "Syncs per turn not counted" in report


# Twenty-eight 1 s loads, and a gateway to start; longer than the default on a loaded machine.
@pytest.mark.timeout(300)
def test_the_edges_benchmark_runs() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("bench.edges needs wrk: apt-get install wrk (.ci/run installs it)")
    report = edges.run(seconds=1)
    assert report.startswith("1 s per load, wrk -t1"), report
    table = [line for line in report.splitlines() if line.startswith("| ")]
    header, *rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    assert header == edges.HEADER
    names = [edge.name for edge in edges.EDGES]
    assert [(row[0], row[1]) for row in rows] == [
        *((name, "no") for name in names),
        *((name, "yes") for name in names),
    ]
    assert all(len(row) == len(header) for row in rows), report
    assert all(row[-1] == "0" for row in rows), report  # no errors
    directs = {edge.name for edge in edges.EDGES if not edge.on_gateway}
    assert directs == {"direct upstream (chat completions)", "direct upstream (messages)"}
    direct = [row for row in rows if row[0] in directs]
    assert all(row[5] == row[6] == "-" for row in direct), report
    gateway = [row for row in rows if row[0] not in directs]
    assert all(row[5][0] in "+-" and row[6].endswith("x") for row in gateway), report
    assert all(float(cell.replace(",", "")) > 0 for row in rows for cell in row[2:5]), report


# Twelve 1 s loads, and three gateways to start.
@pytest.mark.timeout(300)
def test_the_tracing_benchmark_runs() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("bench.tracing needs wrk: apt-get install wrk (.ci/run installs it)")
    report = tracing.run(seconds=1)
    assert report.startswith("1 s per load, wrk -t1"), report
    table = [line for line in report.splitlines() if line.startswith("| ")]
    header, *rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    assert header == tracing.HEADER
    assert [(row[0], row[1]) for row in rows] == [
        *((name, "no") for name in tracing.TARGETS),
        *((name, "yes") for name in tracing.TARGETS),
    ], report  # no errors: a name with errors says so
    assert all(float(cell.replace(",", "")) > 0 for row in rows for cell in row[2:5]), report


def test_the_stream_length_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    stream_length.main(["--sizes", "10,100"])
    header, *rows = capsys.readouterr().out.splitlines()[1:]
    kinds = len(stream_length.KINDS)
    assert header.split()[0] == "chunks" and header.count("ratio") == kinds
    assert [row.split()[0] for row in rows] == ["10", "100"]
    assert [float(ratio) for ratio in rows[0].split()[2::2]] == [1.0] * kinds


@pytest.mark.timeout(600)
def test_the_durable_commit_benchmark_runs() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("bench.sync_cost needs wrk: apt-get install wrk (.ci/run installs it)")
    report = sync_cost.run(seconds=1, rounds=1, baseline=None, baseline_from=None)
    rows = [line for line in report.splitlines() if line.startswith("| ") and "µs" in line]
    assert len(rows) == len(sync_cost.LOADS), report
    assert "this gateway: full / normal throughput at 8 connections" in report
