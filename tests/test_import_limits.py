"""What an import holds in memory, whatever a source holds: a compressed file that
expands past what any log does is refused before it is held, and a line that
cannot be a JSON object, or is longer than any session's, is never assembled.

Peak memory is measured on a child process (its own high-water mark, read by a
parent that ran nothing else)."""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from awl.importers import _source
from awl.importers._record import _find, _last_in, _rfind
from awl.importers._source import JSON_SPACE, Hashing, Passed, head, lines, open_source
from awl.store import scanner
from tests.import_fixtures import (
    CODEX_HARBOR,
    accounted_lines,
    entries,
    run,
    source_lines,
)

MiB = 1 << 20
PEAK_MIB = 300  # an awl process is about 45 MiB; a line assembled, or a bomb held, is GiBs

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="ru_maxrss and /proc as Linux has them"
)

_MEASURE = (
    "import json, resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
    "print(json.dumps([p.returncode, p.stdout + p.stderr, peak]))\n"
)


def awl_peak(tmp_path: Path, *args: str) -> tuple[int, list[str], float]:
    """``awl ARGS`` in a child: its exit status, its output lines, and its peak
    resident memory in MiB."""
    env = dict(os.environ, HOME=str(tmp_path / "home"), AWL_SESSION_DIR=str(tmp_path / "s"))
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "awl", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code, out, peak = json.loads(done.stdout)
    return code, out.splitlines(), peak


def zeros_zst(path: Path, size: int) -> Path:
    """A zstd file of ``size`` NUL bytes (a few KiB for hundreds of MiB)."""
    with open(path, "wb") as f, zstandard.ZstdCompressor(level=1).stream_writer(f) as w:
        block = bytes(MiB)
        for _ in range(size // MiB):
            w.write(block)
    return path


def holed(path: Path, parts: list[bytes | tuple[bytes, int]]) -> Path:
    """A file of ``parts``: bytes as they are, and (lead, size) a run of ``size``
    bytes that is ``lead`` then NULs (a hole: nothing written to disk)."""
    with open(path, "wb") as f:
        for part in parts:
            if isinstance(part, bytes):
                f.write(part)
            else:
                lead, size = part
                f.write(lead)
                f.seek(size - len(lead), os.SEEK_CUR)
        f.truncate(f.tell())
    return path


# ── compressed sources ──


@linux_only
def test_a_zstd_bomb_is_refused_in_one_line_before_it_is_held(tmp_path: Path) -> None:
    """16 KiB of zstd that unpacks to 512 MiB of NULs is refused, naming the file
    and why, with the process never near that size; one that unpacks to less
    than the floor (64 MiB) is read whatever its ratio."""
    bomb = zeros_zst(tmp_path / "rollout-2026-03-15T09-00-00-bomb.jsonl.zst", 512 * MiB)
    assert bomb.stat().st_size < 64 * 1024
    code, out, peak = awl_peak(tmp_path, "import", "--dry-run", str(bomb))
    assert peak < PEAK_MIB, f"peak {peak:.0f} MiB"
    assert code == 1 and len(out) == 2, out
    assert out[0] == (
        f"{bomb}: cannot read: it decompresses to over 200 times its size: not a Codex rollout"
    )
    assert "1 error" in out[1] and not (tmp_path / "s").exists()

    small = zeros_zst(tmp_path / "small.jsonl.zst", 32 * MiB)
    fd = open_source(small)
    try:
        assert os.fstat(fd).st_size == 32 * MiB
    finally:
        os.close(fd)


@linux_only
def test_a_compressed_rollout_is_unpacked_to_a_temporary_file_not_to_memory(
    tmp_path: Path,
) -> None:
    """A rollout past the floor that compresses as logs do is read whole, into an
    unlinked file of the temporary folder (page cache, not the process's memory)."""
    rng = random.Random(7)
    rows = [CODEX_HARBOR.read_bytes()]
    size = len(rows[0])
    while size < 80 * MiB:
        text = rng.randbytes(24 * 1024).hex()  # hex: about 2 times, as logs 3-20 times
        row = b'{"timestamp":"2026-03-15T09:30:00.000Z","type":"event_msg","payload":'
        row += b'{"type":"agent_message","message":"' + text.encode() + b'"}}\n'
        rows.append(row)
        size += len(row)
    data = b"".join(rows)
    packed = tmp_path / "rollout-2026-03-15T09-00-00-big.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor(level=1).compress(data))
    fd = open_source(packed)
    try:
        assert os.fstat(fd).st_size == len(data)
        where = os.readlink(f"/proc/self/fd/{fd}")
        assert where.startswith(os.path.realpath(tempfile.gettempdir()) + os.sep), where
        assert where.endswith(" (deleted)") or "#" in where  # unlinked, or never linked
        objs = head(fd)
        assert objs[0][1]["type"] == "session_meta" and len(objs) == 24
    finally:
        os.close(fd)


# ── long lines ──


@linux_only
@pytest.mark.parametrize("lead", [b"", b"{", b' \t{"type":"session_meta"', b"  \t"])
def test_a_first_line_of_a_gigabyte_is_judged_without_being_held(
    tmp_path: Path, lead: bytes
) -> None:
    """A file that is one line of 1 GiB (NULs; or begun as a JSON object, which
    it cannot be whole in less than 256 MiB) is no session log, said in one
    line, and is never held: a line that cannot be an object is passed over
    unread, one longer than any session's line is not read whole."""
    path = holed(tmp_path / "big.jsonl", [(lead, 1 << 30)])
    code, out, peak = awl_peak(tmp_path, "import", "--dry-run", str(path))
    assert peak < PEAK_MIB, f"peak {peak:.0f} MiB"
    assert code == 1 and len(out) == 2, out
    assert out[0] == f"{path}: not a session log of pi, Claude Code or Codex"


@linux_only
def test_huge_lines_in_a_session_are_skipped_unheld_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    """A rollout with a 1 GiB line of NULs, a line that begins an object and runs
    300 MiB, and a torn last line of 512 MiB: each is said, none is held, and
    every other line is imported."""
    rows = CODEX_HARBOR.read_bytes().splitlines(keepends=True)
    path = holed(
        tmp_path / CODEX_HARBOR.name,
        [
            *rows[:10],
            (b"", 1 << 30),
            b"\n",
            *rows[10:20],
            (b'{"type":"response_item","payload":{"text":"', 300 * MiB),
            b"\n",
            *rows[20:],
            (b"\x00", 512 * MiB),
        ],
    )
    code, out, peak = awl_peak(tmp_path, "import", "--dry-run", str(path))
    assert peak < PEAK_MIB, f"peak {peak:.0f} MiB"
    assert code == 0, out
    assert out[:3] == [
        f"{path}:11: skipped: not a JSON object (a line of {1 << 30} bytes not starting with '{{')",
        f"{path}:22: skipped: too long (a line of {300 * MiB} bytes; one over 256 MiB is not read)",
        f"{path}:{len(rows) + 3}: skipped: an incomplete last line (left for later)",
    ]
    assert out[-1].startswith("1 session,") and "1 would be imported" in out[-1], out


def _pi_store(root: Path, sessions: int, size: int) -> int:
    """``sessions`` pi sessions of about ``size`` bytes each under ``root`` (each its
    own id, in the layout pi uses): prompts and replies of 16 KiB texts. Returns
    the store's size."""
    rng = random.Random(sessions)
    pool = "".join(rng.choices("abcdefgh ", k=1 << 20))
    total = 0
    for n in range(sessions):
        sid = f"0198c0de-{n:04x}-7000-8000-{rng.getrandbits(48):012x}"
        ts = f"2026-03-{1 + n % 28:02d}T10:00:00.000Z"
        header = {"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": "/p"}
        lines = [json.dumps(header)]
        parent = None
        written = 0
        while written < size:
            for role in ("user", "assistant"):
                eid = f"{rng.getrandbits(32):08x}"
                at = rng.randrange(len(pool) - 16 * 1024)
                text = pool[at : at + 16 * 1024]
                message: dict[str, Any] = {
                    "role": role,
                    "content": [{"type": "text", "text": text}],
                }
                if role == "assistant":
                    message |= {"provider": "anthropic", "model": "m", "stopReason": "stop"}
                entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts}
                lines.append(json.dumps({**entry, "message": message}))
                parent = eid
                written += len(lines[-1]) + 1
        path = root / "--p--" / f"{ts.replace(':', '-').replace('.', '-')}_{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        total += path.stat().st_size
    return total


@linux_only
@pytest.mark.parametrize("jobs", [1, 2])
def test_an_imports_memory_is_bounded_by_its_largest_session_not_the_store(
    tmp_path: Path, jobs: int
) -> None:
    """A store of 48 sessions of 3 MiB takes no more memory to import than 6 of
    them do: nothing of a session is held once it is written (each worker's
    peak is measured, as is the parent's). A worker holds two sessions at
    most, the one it converts and the one before, whose log is still being
    synced, so the smaller store already holds that many per worker."""
    few, many = tmp_path / "few", tmp_path / "many"
    small = _pi_store(few, 6, 3 * MiB)
    store = _pi_store(many, 48, 3 * MiB)
    assert store > 140 * MiB and store > 7 * small
    peaks = []
    for where in (few, many):
        code, out, peak = awl_peak(where, "import", "--from", "pi", "-j", str(jobs), str(where))
        assert code == 0 and " imported, " in out[-1], out
        peaks.append(peak)
    # A tenth of what the larger store has more: what holding each session's
    # parse, its entries or its result for the run would add many times over.
    assert peaks[1] < peaks[0] + (store - small) / 10 / MiB, peaks


def test_long_lines_are_imported_or_skipped_as_they_are_and_the_hash_holds(
    tmp_path: Path,
) -> None:
    """Lines longer than awl holds as it reads (1 MiB): an object is taken whole
    (after megabytes of spaces too), a blank one is passed over silently, one
    that is no object is skipped with its reason; the hash kept while reading
    is the file's (imported again: unchanged; grown: updated)."""
    rows = CODEX_HARBOR.read_bytes().splitlines(keepends=True)
    long_text = "harbor " * (3 * MiB // 7)
    message: dict[str, Any] = {
        "timestamp": "2026-03-15T09:00:30.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": long_text}],
        },
    }
    indented = dict(message, timestamp="2026-03-15T09:00:31.000Z")
    indented["payload"] = dict(message["payload"], content=[{"type": "input_text", "text": "x"}])
    body = [
        *rows[:12],
        json.dumps(message).encode() + b"\n",
        b" " * (2 * MiB) + b"\n",  # blank
        b"\t" * (2 * MiB) + json.dumps(indented).encode() + b"\n",  # an object after all
        b"garbage " * MiB + b"\n",
        *rows[12:],
    ]
    src = tmp_path / "a" / CODEX_HARBOR.name
    src.parent.mkdir()
    src.write_bytes(b"".join(body))
    first = run(src, session_dir=tmp_path / "s")
    assert first.status == "imported" and first.path is not None
    assert first.skipped == [
        ("", 16, f"not a JSON object (a line of {8 * MiB} bytes not starting with '{{')")
    ]
    assert long_text in json.dumps(entries(first.path))  # taken whole
    # Every line accounted for, but the blank one; none skipped but line 16: 15 is taken.
    assert accounted_lines(first.path) == source_lines(src)
    assert run(src, session_dir=tmp_path / "s").status == "unchanged"
    with open(src, "ab") as f:
        f.write(b"x" * (3 * MiB) + b"\n" + rows[-1])
    again = run(src, session_dir=tmp_path / "s")
    assert again.status == "updated" and again.skipped[0][1] == len(body) + 1
    assert accounted_lines(first.path) == source_lines(src)
    assert run(src, session_dir=tmp_path / "s").status == "unchanged"


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_lines_hold_no_long_line_that_cannot_be_taken_and_hash_every_byte(
    tmp_path: Path, chunk: int
) -> None:
    """:func:`lines` with small bounds: a line it gives as bytes is the file's; a
    :class:`Passed` stands only for a long line that is blank, does not start
    with ``{``, or is longer than ``longest``; and the hash it keeps up to any
    line it gives is the hash of the file's bytes, from any point."""
    rng = random.Random(chunk)
    pieces = [b"\xef\xbb\xbf" + b" " * 20 + b'{"first":1}']
    for _ in range(80):
        n = rng.randrange(0, 60)
        pieces.append(
            rng.choice(
                [
                    b'{"a":"' + b"x" * n + b'"}',
                    b"x" * n,
                    b" " * n,
                    b" " * n + b"{" + b"y" * rng.randrange(0, 10),
                    b"\x0c" * n + b"z",
                    b"\x0b" * n,  # not JSON's whitespace: not blank
                    b"{" + b"q" * (n + 40),
                ]
            )
        )
    data = b"\n".join(pieces) + b"\n" + b"\x00" * 50  # a long torn tail
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    complete = data.rindex(b"\n") + 1
    seen: set[str] = set()  # what the long lines were given as
    fd = os.open(path, os.O_RDONLY)
    try:
        for start in (0, 1, 17, complete // 2, complete):
            h = Hashing(hashlib.sha256(), start)
            begin = 0
            given = []
            for number, end, raw, terminated in lines(
                fd, chunk=chunk, hashing=h, pass_over=8, longest=40
            ):
                given.append((number, end, raw, terminated))
                real = data[begin : end - terminated]
                if isinstance(raw, Passed):
                    text = real.removeprefix(b"\xef\xbb\xbf") if begin == 0 else real
                    assert raw.size == len(real) > 8 and raw.strip() == (b"\x00" * bool(raw.why))
                    opens = text.lstrip(JSON_SPACE).startswith(b"{")
                    assert bool(raw.why) == bool(text.strip(JSON_SPACE))
                    assert opens == raw.why.startswith("too long")
                    assert len(real) > 40 or not opens
                    seen.add(raw.why.split(" (")[0])
                else:
                    assert raw == (real.removeprefix(b"\xef\xbb\xbf") if number == 1 else real)
                    if len(real) > 8 + chunk:
                        seen.add("read again")  # a long object: not held, read whole at its end
                if terminated and end > start:
                    at = h.at(end)
                    assert at is not None
                    assert at.digest() == hashlib.sha256(data[start:end]).digest()
                begin = end
            assert begin == len(data) and len(given) == len(pieces) + 1
            assert isinstance(given[-1][2], Passed) and not given[-1][3]
    finally:
        os.close(fd)
    # Reads shorter than a line make every kind (a read that holds a line gives it).
    assert chunk > 8 or seen == {"", "not a JSON object", "too long", "read again"}


@pytest.mark.parametrize("chunk", [1, 2, 7, 20, 21, 64, 1 << 20])
@pytest.mark.parametrize("pass_over", [30, 1000])
@pytest.mark.parametrize("seed", range(2))
def test_lines_name_every_line_with_brackets_enough_to_nest_too_deep_whatever_the_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, pass_over: int, seed: int
) -> None:
    """``brackets`` gets exactly the lines holding more than DEEPEST brackets
    (``[`` and ``{``, what a value nested deeper than an import takes needs),
    each found once the line is read: counted across the reads, held or read
    again whole, in a line cut at the end."""
    monkeypatch.setattr(_source, "DEEPEST", 20)
    rng = random.Random(seed * 1000 + chunk)
    pieces = []
    for _ in range(60):
        n = rng.choice([0, 1, 19, 20, 21, 45])
        brackets = bytes(rng.choice(b"[{") for _ in range(n))
        pad = b"x" * rng.randrange(0, 30)
        pieces.append(
            rng.choice(
                [
                    b'{"a":' + brackets + b"}",
                    pad + brackets + pad,
                    brackets[: n // 2] + b"]}" + pad + brackets[n // 2 :],
                    b'{"s":"' + pad + brackets + b'"}',
                ]
            )
        )
    data = b"\n".join(pieces) + b"\n" + b"{" * 25  # a last line with no newline
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    want = {n for n, x in enumerate(data.split(b"\n"), 1) if x.count(b"[") + x.count(b"{") > 20}
    fd = os.open(path, os.O_RDONLY)
    try:
        found: set[int] = set()
        given, passed = [], set()
        for number, _, raw, _ in lines(
            fd, chunk=chunk, pass_over=pass_over, longest=5000, brackets=found
        ):
            given.append(number)
            if isinstance(raw, Passed):
                passed.add(number)
            else:
                assert (number in found) == (number in want), (number, raw)
        assert found - passed == want - passed and given == list(range(1, len(pieces) + 2))
        assert len(want - passed) > 10
    finally:
        os.close(fd)


@pytest.mark.parametrize("chunk", [1, 2, 5, 18, 19, 20, 64, 1 << 20])
@pytest.mark.parametrize("seed", range(3))
def test_lines_name_every_line_holding_a_run_of_19_digits_whatever_the_reads(
    tmp_path: Path, chunk: int, seed: int
) -> None:
    """``numbers`` gets exactly the lines that hold 19 digits in a row (what may be
    an integer orjson rounds), each found once the line is read: runs across
    the reads, within a long line read again, in a line cut at the end."""
    rng = random.Random(seed * 1000 + chunk)
    pieces = []
    for _ in range(60):
        digits = b"7" * rng.choice([0, 1, 18, 19, 20, 45])
        pad = b"x" * rng.randrange(0, 30)
        pieces.append(
            rng.choice(
                [
                    b'{"n":' + (digits or b"1") + b"}",
                    b'{"s":"' + pad + digits + pad + b'"}',
                    pad + digits,
                    digits + b" " + digits,
                    b"{" + b"q" * rng.randrange(40, 60) + digits,  # long: read again whole
                ]
            )
        )
    data = b"\n".join(pieces) + b"\n" + b"9" * 25  # a last line with no newline
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    want = {n for n, x in enumerate(data.split(b"\n"), 1) if re.search(rb"[0-9]{19}", x)}
    fd = os.open(path, os.O_RDONLY)
    try:
        found: set[int] = set()
        given, passed = [], set()
        for number, _, raw, _ in lines(fd, chunk=chunk, pass_over=30, longest=1000, numbers=found):
            given.append(number)
            if isinstance(raw, Passed):
                passed.add(number)  # (not parsed: whether it is named does not matter)
            else:  # known once the line is given, not only later
                assert (number in found) == (number in want), (number, raw)
        assert found - passed == want - passed and given == list(range(1, len(pieces) + 2))
        assert found <= want and len(want - passed) > 10
    finally:
        os.close(fd)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from([b"x", b"\n", b'{"type":', b"\n{ab", b"ab"]), max_size=60),
    end=st.integers(min_value=0, max_value=400),
    width=st.integers(min_value=1, max_value=64),
    near=st.integers(min_value=0, max_value=64),
)
def test_the_records_search_finds_what_mmap_finds(
    parts: list[bytes], end: int, width: int, near: int
) -> None:
    """A log's import records are found with the scanner's memmem (CPython's own
    search crawls through JSON), backward in windows: the same offsets as
    ``mmap.find`` and ``mmap.rfind``, whatever the windows, with either scanner."""
    data = b"".join(parts) or b"\n"
    with mmap.mmap(-1, len(data)) as mm:
        mm.write(data)
        mm.seek(0)  # (mmap.find and rfind start at the position by default)
        for name in scanner.available():
            with scanner.use(name):
                for needle in (b"\n{ab", b'{"type":', b"ab", b"\n"):
                    got = _rfind(mm, needle, None, width, near)
                    assert got == mm.rfind(needle), (name, needle)
                    got = _rfind(mm, needle, end, width, near)
                    assert got == mm.rfind(needle, 0, end), (name, needle)
                    for start in (0, 1, len(data) // 2, len(data), len(data) + 1):
                        got = _find(mm, needle, start, near)
                        assert got == mm.find(needle, start), (name, needle, start)
                    # The halving that finds the last of many matches in a window.
                    for lo in (0, 1, 2, end // 3):
                        stop = max(lo, min(end, len(data)))
                        if mm.find(needle, lo, stop) >= 0:
                            assert _last_in(mm, needle, lo, stop) == mm.rfind(needle, lo, stop)


def test_the_records_search_at_its_own_window_sizes() -> None:
    """Records at the edges of the search's real windows (64 KiB, then twice that
    each time), and many close together at the end (a session imported often,
    a small batch each time): found where mmap finds them."""
    needle = b'\n{"type":"x-import",'
    data = bytearray(b"x" * (3 << 20))
    for edge in (1 << 16, 3 << 16, 7 << 16, 15 << 16, 31 << 16):
        for at in (len(data) - edge - 3, len(data) - edge - len(needle) // 2):
            data[at : at + len(needle)] = needle
    for at in range(len(data) - 40_000, len(data) - 100, 97):
        data[at : at + len(needle)] = needle
    with mmap.mmap(-1, len(data)) as mm:
        mm.write(bytes(data))
        mm.seek(0)
        for name in scanner.available():
            with scanner.use(name):
                for end in (None, len(data) - 40_100, *range(len(data) - 30, len(data) + 1, 7)):
                    stop = len(data) if end is None else end
                    at = _rfind(mm, needle, end)
                    while at >= 0:
                        assert at == mm.rfind(needle, 0, stop), (name, end)
                        stop = at
                        at = _rfind(mm, needle, stop)
                    assert mm.rfind(needle, 0, stop) == -1


@pytest.mark.parametrize("needle", [b"\n", b"ab", b'\n{"type":"x-import",'])
def test_the_records_search_halving_finds_a_last_match_anywhere(needle: bytes) -> None:
    """The last match at each offset of a range long enough to be halved, alone and
    with another before it: the halving never steps over it."""
    size = 300
    with mmap.mmap(-1, size) as mm:
        for at in range(size - len(needle) + 1):
            for before in (None, at // 2):
                data = bytearray(b"x" * size)
                start = 0  # where a forward search from past the first match starts
                if before is not None and before + len(needle) <= at:
                    data[before : before + len(needle)] = needle
                    start = before + 1
                data[at : at + len(needle)] = needle
                mm.seek(0)
                mm.write(bytes(data))
                assert _last_in(mm, needle, 0, size) == at, (at, before)
                assert _rfind(mm, needle, None, 16, 8) == at, (at, before)
                assert _find(mm, needle, start, 8) == at, (at, before)
