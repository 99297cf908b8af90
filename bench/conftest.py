"""Fixtures for the benchmarks: generated logs (cached on disk) and an isolated environment.

``pytest bench/ --benchmark-only`` runs them; ``AWL_BENCH_SIZES=small`` with
``--benchmark-disable`` runs each once on 1 and 4 MB stand-ins (CI).  Files
named ``bench_*.py`` are collected as test modules.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import _gen


def pytest_configure(config: pytest.Config) -> None:
    """Collect ``bench_*.py`` too (the project's python_files only names ``test_*.py``)."""
    patterns = config.getini("python_files")
    if "bench_*.py" not in patterns:
        config.addinivalue_line("python_files", "bench_*.py")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every benchmark gets its own session root, data and (empty) cache folders, fsync off."""
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("AWL_FSYNC", "0")
    yield


@pytest.fixture(scope="session")
def large() -> int:
    """Size of the log of the one-size comparisons (100 MB, or the largest small size)."""
    return _gen.large_size()


@pytest.fixture(scope="session")
def plain_large(large: int) -> _gen.GeneratedLog:
    """The large log as an old awl or another tool left it: no checkpoint, no index cache."""
    return _gen.generate(large, 0)


@pytest.fixture(scope="session")
def cp_large(large: int) -> _gen.GeneratedLog:
    """The large log after awl opened it once: a checkpoint at its end and an index cache."""
    return _gen.generate(large, 0, checkpointed=True)
