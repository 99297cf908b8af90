"""awl.store._index: building the line index, and the record copies it relies on."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awl import SessionManager
from awl.errors import CorruptSession
from awl.store import scanner
from awl.store._index import LogIndex
from awl.store._lines import Problems, check_lines
from awl.store._logmap import LogMap
from awl.store._scanner_fallback import bad_line_mask
from awl.store._tree import build_tree

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


# ── the native tree links against the general path ──

_KINDS = [scanner.KIND_MESSAGE, scanner.KIND_OTHER, scanner.KIND_CHECKPOINT, scanner.KIND_BLANK]


@st.composite
def _records(draw: st.DrawFn) -> np.ndarray:
    """Index records of a plausible log: mostly distinct ids, each parent an
    earlier node (chains and branches), with non-nodes in between; now and
    then a duplicate id, a missing, later or own parent, or a non-hex id."""
    n = draw(st.integers(0, 60))
    out = np.zeros(n, scanner.INDEX_DTYPE)
    ids = draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n, unique=True))
    nodes: list[int] = []
    for i in range(n):
        kind = draw(st.sampled_from([scanner.KIND_MESSAGE] * 6 + [scanner.KIND_OTHER] + _KINDS[2:]))
        ident = ids[i]
        flags = scanner.FLAG_ID | scanner.FLAG_ID_HEX | scanner.FLAG_PARENT
        parent = 0
        if not nodes or draw(st.integers(0, 19)) == 0:
            flags |= scanner.FLAG_PARENT_NULL  # a root
        else:
            flags |= scanner.FLAG_PARENT_HEX
            # Mostly the last node (a chain), sometimes an earlier one (a fork).
            parent = nodes[-1] if draw(st.integers(0, 3)) else draw(st.sampled_from(nodes))
        trouble = draw(st.integers(0, 159))
        if trouble == 0 and nodes:
            ident = draw(st.sampled_from(nodes))  # a duplicate id
        elif trouble == 1:
            parent, flags = draw(st.integers(0, 2**32 - 1)), flags & ~8 | 16  # missing/later
        elif trouble == 2:
            parent, flags = ident, flags & ~8 | 16  # its own parent
        elif trouble == 3:
            flags &= 0xFFFF ^ scanner.FLAG_ID_HEX  # an id that is not 8 hex digits
        elif trouble == 4:
            flags &= 0xFFFF ^ scanner.FLAG_ID  # no id: not a node
        out[i]["kind"] = kind
        out[i]["flags"] = flags
        out[i]["id"] = ident
        out[i]["parent"] = parent
        if kind in (scanner.KIND_MESSAGE, scanner.KIND_OTHER) and flags & scanner.FLAG_ID:
            nodes.append(ident)
    return out


def _recs(*nodes: tuple[int, int | None]) -> np.ndarray:
    """Message records of (id, parent) pairs; parent None is a null parentId."""
    out = np.zeros(len(nodes), scanner.INDEX_DTYPE)
    for i, (ident, parent) in enumerate(nodes):
        out[i]["kind"] = scanner.KIND_MESSAGE
        out[i]["id"] = ident
        flags = scanner.FLAG_ID | scanner.FLAG_ID_HEX | scanner.FLAG_PARENT
        if parent is None:
            flags |= scanner.FLAG_PARENT_NULL
        else:
            flags |= scanner.FLAG_PARENT_HEX
            out[i]["parent"] = parent
        out[i]["flags"] = flags
    return out


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        (_recs((1, None), (1, None)), "duplicate entry id"),
        (_recs((1, None), (2, 1), (3, 2), (2, 1)), "duplicate entry id"),
        (_recs((1, 1)), "parent cycle"),  # its own parent
        (_recs((1, 2), (2, None)), None),  # a later parent: no error, but not linked natively
        (_recs((1, None), (2, 9)), "names no entry"),  # a missing one
    ],
)
def test_what_the_native_links_leave_to_the_general_path(
    records: np.ndarray, problem: str | None
) -> None:
    assert scanner.link_tree(records) is None
    with scanner.use("fallback"):
        problems = Problems("log", collect=True)
        build_tree(records, LogMap(None, 0), "log", problems)
    found = [text for _, text in problems.found]
    if problem is None:
        assert found == []
    else:
        assert found and all(problem in text for text in found), found


@pytest.mark.parametrize("flag", [scanner.FLAG_ID_HEX, scanner.FLAG_PARENT_HEX])
def test_ids_that_are_not_hex_go_to_the_general_path(flag: int) -> None:
    chain = _recs((1, None), (2, 1), (3, 2))
    if "native" in scanner.available():
        assert scanner.link_tree(chain) is not None
    chain["flags"][2] &= 0xFFFF ^ flag  # the last id, or its parentId, is not 8 hex digits
    assert scanner.link_tree(chain) is None


def _mix32(x: np.ndarray) -> np.ndarray:
    """scanner.c's mix32, to craft ids that collide in its table."""
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def test_crafted_colliding_ids_fall_back_instead_of_going_quadratic() -> None:
    n = 2000
    mask = (1 << (2 * n - 1).bit_length()) - 1  # the table link_tree is given
    found: list[int] = []
    start = 0
    while len(found) < n:
        cand = np.arange(start, start + (1 << 22), dtype=np.uint64)
        found += cand[(_mix32(cand) & np.uint32(mask)) == 0].tolist()
        start += 1 << 22
    chain = _recs(*[(k, found[i - 1] if i else None) for i, k in enumerate(found[:n])])
    # Every id lands in one slot: the probe budget runs out, and the numpy
    # path links the tree, as it does for any log it is given.
    assert scanner.link_tree(chain) is None
    tree = build_tree(chain, LogMap(None, 0), "log")
    assert tree.parent_pos.tolist() == [-1, *range(n - 1)]
    assert tree.pos_of(f"{found[n // 2]:08x}") == n // 2


def test_a_long_chain_links_natively() -> None:
    n = 10_000
    rng = np.random.default_rng(5)
    ids = rng.choice(2**32, size=n, replace=False).tolist()
    chain = _recs(*[(k, ids[i - 1] if i else None) for i, k in enumerate(ids)])
    linked = scanner.link_tree(chain)
    if "native" not in scanner.available():
        assert linked is None
        return
    assert linked is not None
    assert linked[0].tolist() == list(range(n))
    assert linked[1].tolist() == [-1, *range(n - 1)]


def test_the_fallback_never_links(scanner_impl: str) -> None:
    records = scanner.scan(
        b'{"type":"message","id":"0000000a","parentId":null}\n'
        b'{"type":"message","id":"0000000b","parentId":"0000000a"}\n'
    )
    linked = scanner.link_tree(records)
    if scanner_impl == "fallback":
        assert linked is None
    else:
        assert linked is not None
        assert linked[0].tolist() == [0, 1] and linked[1].tolist() == [-1, 0]


@st.composite
def _lines(draw: st.DrawFn) -> np.ndarray:
    n = draw(st.integers(0, 30))
    out = np.zeros(n, scanner.INDEX_DTYPE)
    for i in range(n):
        out[i]["kind"] = draw(st.integers(0, 6))
        out[i]["role"] = draw(st.integers(0, 4))
        out[i]["flags"] = draw(st.integers(0, 63))
    return out


@settings(max_examples=500, deadline=None)
@given(records=_lines(), header=st.booleans())
def test_first_bad_line_native_and_fallback_agree(records: np.ndarray, header: bool) -> None:
    results = {}
    for name in scanner.available():
        with scanner.use(name):
            results[name] = scanner.first_bad_line(records, header)
    assert len(set(results.values())) == 1, results
    assert results["fallback"] == _first_bad_by_hand(records, header)
    bad = np.flatnonzero(bad_line_mask(records, header))
    assert (int(bad[0]) if len(bad) else None) == _first_bad_by_hand(records, header)


def _first_bad_by_hand(records: np.ndarray, header: bool) -> int | None:
    """format.md's rules for a line, one record at a time: the oracle."""
    for i, r in enumerate(records.tolist()):
        kind, role, flags = r[5], r[6], r[4]
        if header and i == 0:
            if kind != scanner.KIND_SESSION:
                return 0
            continue
        if kind in (scanner.KIND_INVALID, scanner.KIND_UNTYPED, scanner.KIND_SESSION):
            return i
        if kind == scanner.KIND_MESSAGE and (
            not flags & scanner.FLAG_ID
            or not flags & scanner.FLAG_PARENT
            or role in (scanner.ROLE_NONE, scanner.ROLE_OTHER)
        ):
            return i
    return None


def test_check_lines_names_every_bad_line_after_the_first(scanner_impl: str) -> None:
    buf = (
        b'{"type":"session","version":1}\n'
        b'{"type":"message","id":"00000001","parentId":null,"message":{"role":"user"}}\n'
        b"not json\n"
        b'{"type":"message","id":"00000002","message":{"role":"user"}}\n'
        b'{"type":"session"}\n'
    )
    problems = Problems("log", collect=True)
    check_lines(scanner.scan(buf), "log", 0, problems)
    assert problems.found == [
        (3, "not a complete JSON object"),
        (4, "message entry has no 'parentId' (null for the first entry)"),
        (5, "a second session header"),
    ]
    problems = Problems("log", collect=True)
    check_lines(scanner.scan(buf)[3:], "log", 3, problems)  # a tail: no header rule
    assert [line for line, _ in problems.found] == [4, 5]
    with pytest.raises(CorruptSession, match="first line is not a session header"):
        check_lines(scanner.scan(buf)[1:], "log", 0)
