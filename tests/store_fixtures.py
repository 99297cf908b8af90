"""Fixtures for store tests: an isolated session root and cache, per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test gets its own session root, data and cache folders."""
    monkeypatch.setenv("AWL_SESSION_DIR", str(tmp_path / "sessions"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("AWL_FSYNC", "0")
    yield


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The session root of this test."""
    return tmp_path / "sessions"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A working directory for sessions."""
    p = tmp_path / "project"
    p.mkdir()
    return p
