"""Which logs keep an index cache file: those of at least CACHE_MIN_BYTES (1 MiB)."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

from awl.index import CACHE_MIN_BYTES, wants_cache
from awl.manager import SessionManager
from awl.paths import index_cache_path
from awl.reindex import reindex

from .helpers import HEADER, msg, write_log

pytestmark = pytest.mark.usefixtures("scanner_impl")


@pytest.fixture(autouse=True)
def default_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/conftest.py keeps a cache for every log; these tests are about the default.
    monkeypatch.delenv("AWL_INDEX_CACHE_MIN", raising=False)


def log_of(tmp_path: Path, name: str, size: int) -> Path:
    entries: list[dict[str, object]] = []
    parent = None
    k = 0
    total = 0
    while total < size:
        eid = f"{k + 1:08x}"
        entry = msg(eid, parent, "user" if k % 2 == 0 else "assistant", "x" * 4000)
        entries.append(entry)
        total += 4200
        parent = eid
        k += 1
    return write_log(tmp_path / "logs" / f"{name}.jsonl", [HEADER, *entries])


def test_the_threshold_and_its_override(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CACHE_MIN_BYTES == 1 << 20
    assert not wants_cache(CACHE_MIN_BYTES - 1) and wants_cache(CACHE_MIN_BYTES)
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    assert wants_cache(1)
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "not a number")
    assert not wants_cache(CACHE_MIN_BYTES - 1)


def test_a_small_log_keeps_no_cache_and_still_reads_right(tmp_path: Path) -> None:
    small = log_of(tmp_path, "small", 200_000)
    with SessionManager.open(small) as m:
        m.build_index()
        count = m.message_count
    assert m.stats.cache == "built" and not m.stats.cache_saved
    assert not index_cache_path(small).exists()
    with SessionManager.open(small, read_only=True) as r:
        assert len(r.rebuild_conversation()) == count
        assert len(r.get_branch()) == count
        assert r.stats.cache == "built"  # scanned, as every time


def test_a_big_log_keeps_one_and_reuses_it(tmp_path: Path) -> None:
    big = log_of(tmp_path, "big", CACHE_MIN_BYTES + 100_000)
    with SessionManager.open(big) as m:
        m.build_index()
    assert m.stats.cache_saved and index_cache_path(big).exists()
    with SessionManager.open(big, read_only=True) as r:
        r.get_branch()
        assert r.stats.cache == "loaded"


def test_an_old_cache_of_a_small_log_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = log_of(tmp_path, "small", 100_000)
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    SessionManager.open(small).close()
    assert index_cache_path(small).exists()
    monkeypatch.delenv("AWL_INDEX_CACHE_MIN")
    cache = str(index_cache_path(small))
    opened = _spy_opens(monkeypatch)
    with SessionManager.open(small, read_only=True) as r:
        r.get_branch()
    monkeypatch.undo()
    assert cache not in opened and r.stats.cache == "built"


def _spy_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path opened from now on, through open() or os.open()."""
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def os_spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(os, "open", os_spy)
    return opened


def test_reindexing_a_current_big_log_reads_its_cache_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = log_of(tmp_path, "big", CACHE_MIN_BYTES + 100_000)
    reindex([big], jobs=1)
    cache = str(index_cache_path(big))
    opened = _spy_opens(monkeypatch)
    _, summary = reindex([big], jobs=1)
    monkeypatch.undo()
    assert summary.caches == 0 and summary.checkpointed == 0
    assert opened.count(cache) == 1, opened


def test_reindex_counts_only_the_caches_it_writes(tmp_path: Path) -> None:
    small = log_of(tmp_path, "a-small", 300_000)
    big = log_of(tmp_path, "b-big", CACHE_MIN_BYTES + 50_000)
    results, summary = reindex([small, big], jobs=1)
    by_name = {Path(r.path).name: r for r in results}
    assert (by_name["a-small.jsonl"].cache_written, by_name["b-big.jsonl"].cache_written) == (
        False,
        True,
    )
    assert summary.caches == 1 and summary.checkpointed == 2
    assert not index_cache_path(small).exists() and index_cache_path(big).exists()
    _, again = reindex([small, big], jobs=1, dry_run=True)
    assert again.caches == 0 and again.checkpointed == 0
