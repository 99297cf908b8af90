"""awl.store._logmap: a log's bytes as an open sees them, and passes that release what they read."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import awl.store._logmap as logmap
from awl.errors import SessionError
from awl.store import scanner
from awl.store._logmap import LogMap

from .helpers import HEADER, chain, line, msg


def _mapped_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, ours = 0, False
    with open("/proc/self/smaps") as fh:
        for row in fh:
            head = row.split()
            if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's first line
                ours = row.rstrip("\n").endswith(str(path))
            elif ours and row.startswith("Rss:"):
                total += int(row.split()[1])
    return total


def _log_bytes(sizes: list[int]) -> bytes:
    out = [line(HEADER)]
    parent = None
    for i, n in enumerate(sizes):
        eid = f"{i + 1:08x}"
        out.append(line(msg(eid, parent, "user" if i % 2 == 0 else "assistant", "x" * n)))
        parent = eid
    return b"".join(out)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=40),
    window=st.integers(1, 9000),
    torn=st.booleans(),
    reader=st.booleans(),
)
def test_windowed_scan_gives_the_records_of_one_scan(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    window: int,
    torn: bool,
    reader: bool,
) -> None:
    data = _log_bytes(sizes) + (b'{"type":"mess' if torn else b"")
    path = tmp_path_factory.mktemp("w") / "log.jsonl"
    path.write_bytes(data)
    expected = scanner.scan(data, 0, len(data))
    saved = logmap.RELEASE_WINDOW
    logmap.RELEASE_WINDOW = window
    fd = os.open(path, os.O_RDONLY)
    try:
        log = LogMap.for_reader(fd, len(data)) if reader else LogMap.whole(fd, len(data))
        try:
            got = log.scan(0, len(data))
            assert np.array_equal(got.view(np.uint8), expected.view(np.uint8))
        finally:
            log.close()
    finally:
        os.close(fd)
        logmap.RELEASE_WINDOW = saved


def test_release_drops_the_pages_and_keeps_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    data = _log_bytes([4000] * 2000)  # 8 MB
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        log = LogMap.whole(fd, len(data))
        try:
            assert bytes(log.view(0, len(data))) == data  # every page touched
            touched = _mapped_kib(path)
            assert touched >= len(data) // 1024 - 8
            log.release(100, len(data) - 100)  # partial first and last pages go too
            assert _mapped_kib(path) <= 8
            assert bytes(log.view(0, len(data))) == data  # mapped again on touch
        finally:
            log.close()
    finally:
        os.close(fd)


def test_release_of_a_reader_never_touches_its_pread_tail(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    data = _log_bytes([100, 200, 300]) + b'{"type":"mess'
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        log = LogMap.for_reader(fd, len(data))
        log.release(0, len(data))
        assert bytes(log.view(0, len(data))) == data
        log.close()
        log.release(0, len(data))  # closed: a hint, nothing to do
    finally:
        os.close(fd)


def test_a_pass_releases_behind_it_either_way(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    data = _log_bytes([4000] * 2000)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    saved = logmap.RELEASE_WINDOW
    logmap.RELEASE_WINDOW = 1 << 20
    try:
        log = LogMap.whole(fd, len(data))
        for direction in (1, -1):
            starts = list(range(0, len(data), 4096))[::direction]
            behind = log.passing(starts[0])
            peak = 0
            for pos in starts:
                behind.at(pos)
                log.view(pos, pos + 1)[0]
                peak = max(peak, _mapped_kib(path)) if pos % (1 << 18) < 4096 else peak
            assert peak <= 2 * 1024 + 64, direction  # about a window, never the 8 MB
        log.close()
    finally:
        logmap.RELEASE_WINDOW = saved
        os.close(fd)


_CHILD = textwrap.dedent(
    """
    import sys
    import awl.store._logmap as logmap
    logmap.RELEASE_WINDOW = 1 << 20
    from awl import SessionManager
    from awl.store import reindex_file
    from awl.store import verify_log

    def peak():
        with open("/proc/self/status") as fh:
            return next(int(r.split()[1]) for r in fh if r.startswith("VmHWM:"))

    path, what = sys.argv[1], sys.argv[2]
    before = peak()
    if what == "open":
        with SessionManager.open(path, read_only=True) as m:
            assert m.message_count == 8000
    elif what == "show":
        with SessionManager.open(path, read_only=True) as m:
            assert sum(1 for _ in m.rebuild_conversation().stream()) == 8000
    elif what == "verify":
        assert verify_log(path).ok
    elif what == "reindex":
        r = reindex_file(path)
        assert r.checkpointed and not r.failed, r
    print(peak() - before)
    """
)


@pytest.mark.parametrize("what", ["open", "show", "verify", "reindex"])
def test_a_pass_over_a_big_log_holds_a_window_not_the_log(tmp_path: Path, what: str) -> None:
    # 64 MB of messages; no user message names a model, so the active-model
    # walk reads every one of them, backwards, after the scan.
    entries = chain(8_000)
    for e in entries:
        e.pop("provider", None)
        e.pop("model", None)
        e["message"]["content"][0]["text"] = "y" * 8000
    path = tmp_path / "log.jsonl"
    path.write_bytes(line(HEADER) + b"".join(line(e) for e in entries))
    size_kib = path.stat().st_size // 1024
    env = dict(os.environ, AWL_FSYNC="0", XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), what],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    grew = int(done.stdout)
    # Windows of 1 MB; what a pass allocates (records, one message) is small.
    assert grew < size_kib // 4, (grew, size_kib)


@pytest.mark.usefixtures("scanner_impl")
def test_find_in_either_part_is_bytes_find(tmp_path: Path) -> None:
    data = b'{"a":"checkpoint"}\n{"b":1}\n{"c":"last checkpoint"}'
    path = tmp_path / "log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        log = LogMap.for_reader(fd, len(data))  # the last line is read, the rest mapped
        split = data.rindex(b"\n") + 1
        assert log.split == split
        for lo in range(len(data) + 1):
            for hi in range(lo, len(data) + 1):
                # (a needle that spans the split would hold a newline: never looked for)
                for needle in (b"checkpoint", b"1}", b"}\n", b"\n", b"", b"last"):
                    assert log.find(needle, lo, hi) == data.find(needle, lo, hi), (
                        needle,
                        lo,
                        hi,
                    )
        log.close()
    finally:
        os.close(fd)


def _trimmed_and_torn_again(
    monkeypatch: pytest.MonkeyPatch, path: Path, whole: int, torn: bytes
) -> list[int]:
    """Make the file change under a reader's reads as a writer's open and a second
    crash change it: the first read finds it trimmed to ``whole`` bytes, the next one
    finds the torn line written again.  The reads and the file are real; only their
    order against the writer is fixed here.  Returns the sizes each read saw."""
    real = os.pread
    seen: list[int] = []

    def pread(fd: int, n: int, offset: int) -> bytes:
        if not seen:
            os.truncate(path, whole)  # the writer trims the torn tail
        elif len(seen) == 1:
            with open(path, "ab") as fh:  # and the next writer dies mid-write again
                fh.write(torn)
        seen.append(os.fstat(fd).st_size)
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)  # the reads awl.store._logmap makes
    return seen


def test_a_reader_looks_again_at_a_log_cut_and_torn_again_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long torn tail trimmed, then written again, between a reader's reads: the
    reader judged the last line on bytes of two files, and left out the whole log."""
    data = _log_bytes([10, 20, 30, 40])
    torn = b'{"type":"message","id":"0000beef","message":{"content":"' + b"z" * (2 << 20)
    path = tmp_path / "log"
    path.write_bytes(data + torn)
    fd = os.open(path, os.O_RDONLY)
    try:
        seen = _trimmed_and_torn_again(monkeypatch, path, len(data), torn)
        log = LogMap.for_reader(fd, len(data) + len(torn))
        assert len(seen) >= 2  # the change came between two reads
        assert bytes(log.view(0, len(log))) == data  # every whole line, nothing else
        assert log.cut == 0  # the torn line came after the size the second look took
        log.close()
    finally:
        os.close(fd)


def test_a_reader_gives_up_on_a_log_cut_under_every_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file cut under each of a reader's looks is an error, not a guess."""
    data = _log_bytes([10, 20])
    path = tmp_path / "log"
    path.write_bytes(data)
    real = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        # Every look finds the file a byte shorter than the size it took.
        got = real(fd, n, offset)
        return got[:-1] if got else got

    monkeypatch.setattr(os, "pread", pread)  # the reads awl.store._logmap makes
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(SessionError, match="cut 64 times while it was read"):
            LogMap.for_reader(fd, len(data))
    finally:
        os.close(fd)
