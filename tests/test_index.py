"""awl.index: building the line index, and the record copies it relies on."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from awl import scanner
from awl.index import LogIndex
from awl.logmap import LogMap
from awl.manager import SessionManager

from .helpers import HEADER, msg, write_log


def _log(tmp_path: Path, n: int, last_text: str = "the end") -> Path:
    objs = [HEADER] + [
        msg(f"{i:08x}", f"{i - 1:08x}" if i else None, "user" if i % 2 == 0 else "assistant", "x")
        for i in range(n)
    ]
    objs.append(msg(f"{n:08x}", f"{n - 1:08x}", "user", last_text))
    return write_log(tmp_path / "log.jsonl", objs)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_concat_records_equals_numpy(scanner_impl: str) -> None:
    buf = b"".join(b'{"type":"message","id":"%08x"}\n' % i for i in range(50))
    a, b = scanner.scan(buf, 0, 350), scanner.scan(buf, 350)
    joined = scanner.concat_records([a, b[::1]])
    assert _same(joined, np.concatenate([a, b]))
    assert _same(joined, scanner.scan(buf))
    assert len(scanner.concat_records([])) == 0
    # Not a view of its parts: the index owns its records.
    joined["id"][0] = 7
    assert int(a["id"][0]) != 7


def test_scan_grows_past_its_first_guess(scanner_impl: str) -> None:
    # Short lines: the first buffer (sized for 256-byte lines) fills up and
    # grows several times; every record survives the copies.
    buf = b"".join(b'{"type":"message","id":"%08x"}\n' % i for i in range(20_000))
    rec = scanner.scan(buf)
    assert len(rec) == 20_000
    assert rec["id"].tolist() == list(range(20_000))
    assert int(rec["offset"][-1]) == len(buf) - 35


@pytest.mark.parametrize("terminated", [True, False])
def test_build_with_the_last_line_already_scanned(tmp_path: Path, terminated: bool) -> None:
    path = _log(tmp_path, 40, last_text="y" * 5000)
    if not terminated:
        path.write_bytes(path.read_bytes().rstrip(b"\n"))
    size = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        log = LogMap.whole(fd, size)
        data = path.read_bytes()
        last = data.rfind(b"\n", 0, size - 1) + 1
        known = (last, log.scan(last, size))
        built = LogIndex.build(log, size, known)
        plain = LogIndex.build(log, size)
        assert _same(built.records, plain.records)
        assert built.size == plain.size == size
        # A hint that does not fit the range is not used.
        assert _same(LogIndex.build(log, size, (0, known[1])).records, plain.records)
        log.close()
    finally:
        os.close(fd)


def test_an_open_scans_the_last_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path, 30, last_text="z" * 20_000)
    last = path.read_bytes().rfind(b"\n", 0, path.stat().st_size - 1) + 1
    seen: list[tuple[int, int]] = []
    real = LogMap.scan

    def spy(self: LogMap, start: int, end: int) -> np.ndarray:
        seen.append((start, end))
        return real(self, start, end)

    monkeypatch.setattr(LogMap, "scan", spy)
    with SessionManager.open(path, read_only=True) as m:
        assert m.message_count == 31
        assert m.stats.mode == "index"
    covering_last = [s for s in seen if s[0] <= last < s[1]]
    assert len(covering_last) == 1, seen
