"""Scanner benchmarks: native vs fallback vs plain Python baselines.

Run: python -m pytest bench/bench_scanner.py --benchmark-only
The log is bench/_gen.py's cached checkpointed log of the "large" size
(100 MB by default; AWL_BENCH_SIZES=small for a quick run).  Each benchmark
records MB/s in extra_info.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from awl.store import scanner
from bench import _gen

IMPLS = [
    pytest.param(
        name, marks=pytest.mark.skipif(name not in scanner.available(), reason=f"{name} not built")
    )
    for name in ("native", "fallback")
]


@pytest.fixture(scope="module")
def log(large: int) -> Iterator[mmap.mmap]:
    path = _gen.cached(large, seed=0)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        yield mm


@pytest.fixture(scope="module")
def log_bytes(log: mmap.mmap) -> bytes:
    return log[:]


def _run(benchmark: Any, fn: Callable[[], Any], nbytes: int, rounds: int = 5) -> Any:
    result = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)
    if benchmark.stats is not None:  # None under --benchmark-disable
        mean = benchmark.stats.stats.mean
        benchmark.extra_info["MB/s"] = round(nbytes / mean / 1e6, 1)
    return result


@pytest.mark.benchmark(group="line-offsets")
@pytest.mark.parametrize("impl", IMPLS)
def test_line_starts(benchmark: Any, log: mmap.mmap, impl: str) -> None:
    with scanner.use(impl):
        starts = _run(benchmark, lambda: scanner.line_starts(log), len(log))
    assert len(starts) == log[:].count(b"\n")


@pytest.mark.benchmark(group="line-offsets")
def test_line_starts_bytes_split(benchmark: Any, log_bytes: bytes) -> None:
    """Baseline: what a plain Python reader does."""
    _run(benchmark, lambda: log_bytes.split(b"\n"), len(log_bytes))


@pytest.mark.benchmark(group="scan")
@pytest.mark.parametrize("impl", IMPLS)
def test_scan_whole_log(benchmark: Any, log: mmap.mmap, impl: str) -> None:
    with scanner.use(impl):
        recs = _run(
            benchmark, lambda: scanner.scan(log), len(log), rounds=5 if impl == "native" else 2
        )
    assert int((recs["kind"] == scanner.KIND_INVALID).sum()) == 0


@pytest.mark.benchmark(group="validate-trailing-line")
@pytest.mark.parametrize("impl", IMPLS)
def test_validate_trailing_line(benchmark: Any, log: mmap.mmap, impl: str) -> None:
    """Crash recovery checks the last line of a log before appending."""
    end = len(log) - 1
    start = log.rfind(b"\n", 0, end) + 1
    with scanner.use(impl):
        assert _run(benchmark, lambda: scanner.validate(log, start, end), end - start, rounds=200)


@pytest.mark.benchmark(group="validate-trailing-line")
@pytest.mark.parametrize("impl", IMPLS)
def test_validate_largest_line(benchmark: Any, log: mmap.mmap, log_bytes: bytes, impl: str) -> None:
    recs = scanner.scan(log)
    i = int(recs["length"].argmax())
    start, end = int(recs["offset"][i]), int(recs["offset"][i] + recs["length"][i])
    with scanner.use(impl):
        assert _run(benchmark, lambda: scanner.validate(log, start, end), end - start, rounds=100)


@pytest.mark.benchmark(group="find-last")
@pytest.mark.parametrize("impl", IMPLS)
def test_find_last_checkpoint(benchmark: Any, log: mmap.mmap, impl: str) -> None:
    with scanner.use(impl):
        off = _run(benchmark, lambda: scanner.find_last(log, "checkpoint"), len(log), rounds=20)
    assert off is not None
