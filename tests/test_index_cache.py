"""Which logs keep an index cache file (those of at least CACHE_MIN_BYTES), and pruning."""

from __future__ import annotations

import builtins
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

import awl.store._index_cache as index_cache
from awl import Message, SessionManager, Text
from awl.cli import main
from awl.paths import index_cache_path, project_dir
from awl.store import prune_caches, reindex, scanner
from awl.store._index_cache import _CACHE_VERSION as CACHE_VERSION
from awl.store._index_cache import (
    _HEAD,
    _HEAD_SIZE,
    CACHE_MIN_BYTES,
    CACHE_TMP_GRACE,
    _crc,
    stale_caches,
    wants_cache,
)

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


def cache_use(log: Path) -> str:
    """How a reader's index came to be: "loaded" from the cache file, or "built"."""
    with SessionManager.open(log, read_only=True) as r:
        r.get_branch()
        return r.stats.cache


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
    assert cache_use(big) == "loaded"


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


def test_a_log_whose_last_line_lacks_its_newline_keeps_its_cache_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache stops short of a last line without its newline (it may yet grow): that
    line is not a reason to write the same cache again at every reindex; once
    the line has its newline, the cache is extended to cover it.  (A log small
    enough that no checkpoint, which would end that line, fits its budget.)"""
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    big = log_of(tmp_path, "big", 20_000)
    big.write_bytes(big.read_bytes().rstrip(b"\n"))  # the last line whole, no newline
    _, first = reindex([big], jobs=1)
    assert first.caches == 1
    cache = index_cache_path(big)
    written = cache.read_bytes()
    for _ in range(2):
        _, again = reindex([big], jobs=1)
        assert again.caches == 0 and cache.read_bytes() == written
    with big.open("ab") as f:
        f.write(b"\n")
    _, grown = reindex([big], jobs=1)
    assert grown.caches == 1 and cache.read_bytes() != written


# ── stale cache files ──


def _cache_of(log: Path) -> Path:
    SessionManager.open(log).close()
    cache = index_cache_path(log)
    assert cache.exists()
    return cache


def test_stale_caches_are_named_and_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    kept = log_of(tmp_path, "kept", 50_000)
    gone = log_of(tmp_path, "gone", 50_000)
    replaced = log_of(tmp_path, "replaced", 50_000)
    small = log_of(tmp_path, "small", 20_000)
    caches = {
        name: _cache_of(p)
        for name, p in [("kept", kept), ("gone", gone), ("replaced", replaced), ("small", small)]
    }
    gone.unlink()
    # Both files exist at once, so the new one cannot reuse the old inode.
    copy = replaced.with_name("copy.jsonl")
    copy.write_bytes(replaced.read_bytes())
    os.replace(copy, replaced)
    folder = caches["kept"].parent
    # A cache an older awl wrote (version 1 had no path at its end).
    old = folder / ("1" * 32 + ".idx")
    data = bytearray(caches["kept"].read_bytes())
    data[8:12] = (1).to_bytes(4, "little")
    old.write_bytes(bytes(data))
    cut = folder / ("2" * 32 + ".idx")
    cut.write_bytes(caches["kept"].read_bytes()[:-3])
    junk = folder / ("3" * 32 + ".idx")
    junk.write_bytes(b"garbage " * 20)
    misnamed = folder / ("4" * 32 + ".idx")
    misnamed.write_bytes(caches["kept"].read_bytes())
    dead_tmp = folder / (caches["kept"].name + ".4242.tmp")
    dead_tmp.write_bytes(b"half")
    past = time.time() - 2 * CACHE_TMP_GRACE
    os.utime(dead_tmp, (past, past))
    live_tmp = folder / (caches["kept"].name + ".4243.tmp")
    live_tmp.write_bytes(b"half")
    (folder / "notes.txt").write_bytes(b"not awl's")
    (folder / "notes.idx").write_bytes(b"not named like a cache")
    (folder / ("5" * 32 + ".idx")).symlink_to(caches["kept"])
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "40000")  # "small" is under it now

    found = {p.name: why for p, why in stale_caches()}
    assert found == {
        caches["gone"].name: f"its log {gone} no longer exists",
        caches["replaced"].name: f"its log {replaced} is another file now",
        caches["small"].name: f"its log {small} is under the cache threshold",
        old.name: f"cache version 1, not {CACHE_VERSION}",
        cut.name: "its size does not match its header",
        junk.name: "not an index cache",
        misnamed.name: f"its name is not the one of its log {kept}",
        dead_tmp.name: "a cache write whose process died",
    }
    before = {p.name: p.read_bytes() for p in folder.iterdir() if not p.is_symlink()}
    dry = prune_caches(dry_run=True)
    assert {Path(r.path).name for r in dry} == set(found)
    assert {p.name: p.read_bytes() for p in folder.iterdir() if not p.is_symlink()} == before
    done = prune_caches()
    assert [(Path(r.path).name, r.pruned, r.error) for r in done] == [
        (Path(r.path).name, r.pruned, None) for r in dry
    ]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [caches["kept"].name, live_tmp.name, "notes.idx", "notes.txt", "5" * 32 + ".idx"]
    )
    assert stale_caches() == []
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    assert cache_use(kept) == "loaded"  # the live cache still serves its log


def test_a_cache_without_its_path_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    log = log_of(tmp_path, "log", 50_000)
    cache = _cache_of(log)
    real = os.fsencode(os.path.realpath(log))
    data = cache.read_bytes()
    assert data.endswith(real)
    cache.write_bytes(data[: -len(real)])
    assert cache_use(log) == "built"


def test_reindex_all_prunes_and_a_dry_run_spares_caches_it_would_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    project = tmp_path / "project"
    project.mkdir()
    with SessionManager.create(project, "offline", "echo") as m:
        m.append_message(Message("user", [Text("hello")]))
        log = m.path
    cache = index_cache_path(log)
    # The log's cache as an older awl left it: a run rewrites it, so it is not stale.
    data = bytearray(cache.read_bytes())
    data[8:12] = (1).to_bytes(4, "little")
    cache.write_bytes(bytes(data))
    gone = log_of(tmp_path, "gone", 20_000)
    gone_cache = _cache_of(gone)
    gone.unlink()
    assert project_dir(project) == log.parent
    monkeypatch.chdir(project)
    runner = CliRunner()

    res = runner.invoke(main, ["reindex"], catch_exceptions=False)  # this project only
    assert res.exit_code == 0 and gone_cache.exists() and "stale" not in res.output

    cache.write_bytes(bytes(data))
    before = cache.read_bytes()
    res = runner.invoke(main, ["reindex", "--all", "--dry-run"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"{gone_cache}: would remove a stale index cache (its log {gone} no longer exists)" in (
        res.output
    )
    assert str(cache) not in res.output and "1 stale index cache would be removed" in res.output
    assert gone_cache.exists() and cache.read_bytes() == before

    res = runner.invoke(main, ["reindex", "--all", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.output)
    assert doc["summary"]["pruned"] == 1 and doc["summary"]["files"] == 1
    (entry,) = [f for f in doc["files"] if f["pruned"]]
    assert entry["path"] == str(gone_cache) and not gone_cache.exists()
    assert cache.exists() and stale_caches() == []


def test_a_cache_folder_that_cannot_be_read_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = index_cache_path(tmp_path / "x.jsonl").parent
    folder.parent.mkdir(parents=True)
    folder.symlink_to(folder)  # a loop: listing it fails with ELOOP
    assert stale_caches() == []
    res = CliRunner().invoke(main, ["reindex", "--all"], catch_exceptions=False)
    assert res.exit_code == 0, res.output


def test_a_stale_cache_of_a_log_with_a_non_utf8_path_is_reported_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9"))
    log = log_of(odd, "gone", 20_000)
    cache = _cache_of(log)
    log.unlink()
    res = CliRunner().invoke(main, ["reindex", "--all", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (entry,) = [f for f in orjson.loads(res.output)["files"] if f["pruned"]]
    assert (
        entry["path"] == str(cache)
        and "caf\\xe9/logs/gone.jsonl no longer exists" in (entry["pruned"])
    )
    assert not cache.exists()


def _state(log: Path) -> tuple[Any, ...]:
    with SessionManager.open(log, read_only=True) as r:
        return (r.leaf_id, r.message_count, r.active_model(), r.first_prompt, r.last_activity)


@pytest.mark.parametrize("field", ["offset", "length", "id", "parent", "kind"])
def test_a_damaged_record_is_never_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    """One bit changed in one record: the CRC-32 refuses the cache file."""
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    log = log_of(tmp_path, "log", 50_000)
    cache = _cache_of(log)
    truth = _state(log)
    assert scanner.INDEX_DTYPE.fields is not None  # a structured dtype has fields
    where = scanner.INDEX_DTYPE.fields[field][1]
    data = bytearray(cache.read_bytes())
    data[_HEAD_SIZE + 2 * scanner.INDEX_DTYPE.itemsize + where] ^= 1  # the third record
    cache.write_bytes(bytes(data))
    assert cache_use(log) == "built"
    assert _state(log) == truth


def test_a_writers_close_reads_no_records_of_a_current_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resume and quit: the cache's header says it covers the log, so its records
    (and their CRC-32, O(lines)) are not read, only a reindex checks them."""
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    log = log_of(tmp_path, "log", 500_000)  # big enough for a checkpoint
    cache = _cache_of(log)
    crcs: list[int] = []
    real_crc = index_cache._crc

    def counting_crc(records: Any) -> int:
        crcs.append(len(records))
        return real_crc(records)

    monkeypatch.setattr(index_cache, "_crc", counting_crc)
    before = cache.stat().st_mtime_ns
    with SessionManager.open(log) as m:
        assert m.stats.mode == "checkpoint"
    assert crcs == [] and cache.stat().st_mtime_ns == before
    # A damaged record is not seen by a close, and is by a reindex, which rewrites it.
    data = bytearray(cache.read_bytes())
    data[_HEAD_SIZE + 3] ^= 1
    cache.write_bytes(bytes(data))
    SessionManager.open(log).close()
    assert cache.read_bytes() == bytes(data)
    (result,), _ = reindex([log], jobs=1)
    assert result.cache_written and crcs
    assert cache.read_bytes() != bytes(data) and cache_use(log) == "loaded"


def test_a_cache_that_lies_consistently_is_dropped_for_a_fresh_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record one byte short of its line, under a CRC that matches (a lie no
    check on the files can see): the open notices, rescans, and a writer
    replaces the cache file."""
    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    log = log_of(tmp_path, "log", 50_000)
    cache = _cache_of(log)  # a writer's open: a checkpoint, then the cache
    # An entry after the checkpoint: the next open derives its state from the index.
    with SessionManager.open(log) as m:
        m.append_message(Message("user", [Text("more")]), provider="openai", model="gpt")
        m.append_message(Message("assistant", [Text("ok")]), provider="openai", model="gpt")
    truth = _state(log)
    data = bytearray(cache.read_bytes())
    head = list(_HEAD.unpack_from(data))
    count = head[6]
    body = slice(_HEAD_SIZE, _HEAD_SIZE + count * scanner.INDEX_DTYPE.itemsize)
    records = np.frombuffer(bytes(data[body]), dtype=scanner.INDEX_DTYPE).copy()
    last_user = np.flatnonzero(records["role"] == scanner.ROLE_USER)[-1]
    assert last_user < count - 1  # not the last line, whose end the cache must match
    records["length"][last_user] -= 1
    data[body] = records.tobytes()
    head[-1] = _crc(records)
    _HEAD.pack_into(data, 0, *head)
    cache.write_bytes(bytes(data))
    with SessionManager.open(log) as m:
        assert m.stats.cache == "rebuilt"
        got = (m.leaf_id, m.message_count, m.active_model(), m.first_prompt, m.last_activity)
        assert got == truth
    assert cache_use(log) == "loaded"  # the writer saved a true one
    assert _state(log) == truth


def test_verification_trusts_no_cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache that lies under a matching CRC (a user message's role changed)
    makes verification neither fail nor blame the true checkpoint."""
    from awl.store import verify_log

    monkeypatch.setenv("AWL_INDEX_CACHE_MIN", "0")
    log = log_of(tmp_path, "log", 300_000)  # big enough for a checkpoint
    cache = _cache_of(log)
    assert b'"type":"checkpoint"' in log.read_bytes().splitlines()[-1]
    assert verify_log(log).ok
    data = bytearray(cache.read_bytes())
    head = list(_HEAD.unpack_from(data))
    body = slice(_HEAD_SIZE, _HEAD_SIZE + head[6] * scanner.INDEX_DTYPE.itemsize)
    records = np.frombuffer(bytes(data[body]), dtype=scanner.INDEX_DTYPE).copy()
    first_user = np.flatnonzero(records["role"] == scanner.ROLE_USER)[0]
    records["role"][first_user] = scanner.ROLE_ASSISTANT
    data[body] = records.tobytes()
    head[-1] = _crc(records)
    _HEAD.pack_into(data, 0, *head)
    cache.write_bytes(bytes(data))
    report = verify_log(log)
    assert report.ok, report.problems
