"""``awl import`` benchmarks, small: a generated store of each format imported next to
the bare orjson parse of the same files (``bench/import_report.py`` runs the
1 GB comparison and the pi peer comparison).  Nothing here asserts a timing;
the benchmarks assert that what they imported is right.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import _gen, import_report
from bench._gen_import import build_store


def _store(fmt: str) -> Path:
    """A small store of ``fmt``: about 1 MB per size of AWL_BENCH_SIZES' smallest."""
    size = min(_gen.bench_sizes())
    where = _gen.bench_dir() / "import-bench" / f"{fmt}-{size}"
    if not (where / ".complete").exists():
        build_store(where, fmt, size, 6, seed=3)
        (where / ".complete").write_text("ok")
    return where


@pytest.mark.parametrize("baseline", ["floor", "copy", "round_trip"])
@pytest.mark.parametrize("fmt", import_report.FORMATS)
def test_baseline(benchmark: Any, fmt: str, baseline: str) -> None:
    """The floor (read, split and orjson-parse every line of the store), the copy
    (read and write every file: the disk's part) and the round trip (parse,
    serialize back, hash and write every line: no conversion)."""
    folder = _store(fmt)
    benchmark.group = f"import a {fmt} store"
    measure = getattr(import_report, baseline)
    seconds = benchmark.pedantic(lambda: measure(folder), rounds=3, iterations=1)
    assert seconds > 0


@pytest.mark.parametrize("fmt", import_report.FORMATS)
def test_awl_import(benchmark: Any, fmt: str) -> None:
    """The whole import of the store into an empty session root (worker processes)."""
    folder = _store(fmt)
    benchmark.group = f"import a {fmt} store"

    def once() -> Any:
        return import_report.import_run(folder, fmt, jobs=2)[1]

    summary = benchmark.pedantic(once, rounds=3, iterations=1)
    assert summary.imported == 6 and summary.skipped == 0 and summary.entries > 0
