"""The line index of a session log, the tree derived from it, and its cache.

The index is one :data:`awl.scanner.INDEX_DTYPE` record per line (offset,
length, kind, role, id, parent, flags), built by the scanner without parsing
JSON in Python.  The tree — which entry is whose parent, which ids exist,
the branch from the root to a leaf — is computed from those arrays with
numpy.  The log is the only truth: the index is a cache, saved under
``$XDG_CACHE_HOME/awl/index/`` and rebuilt whenever it does not match the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson

from . import scanner
from ._numpy import np, npt
from ._scanner_fallback import bad_line_mask
from .environment import index_cache_min
from .errors import CorruptSession
from .paths import ensure_private_dir, index_cache_dir, index_cache_path, real_log_path

Records = npt.NDArray[Any]


class LogBytes(Protocol):
    """What the index reads a log through (:class:`awl.logmap.LogMap`)."""

    def scan(self, start: int, end: int) -> Records:
        """Scanner records of the lines in ``[start, end)``."""
        ...

    def view(self, start: int, end: int) -> memoryview:
        """The bytes ``[start, end)``."""
        ...


IntArray = npt.NDArray[np.int64]

# Ids that are not 8 lowercase hex characters get keys above this, numbered
# in order of first appearance; hex ids are their own value.
SLOW_KEY_BASE = 1 << 32
NULL_KEY = -1


@dataclass(slots=True)
class Tree:
    """The entry tree of a log, as arrays over its tree-node lines."""

    rows: IntArray  # line index of each node, in file order
    keys: IntArray  # key of each node's id
    parent_pos: IntArray  # position (into rows) of each node's parent, -1 for a root
    slow_ids: dict[str, int]  # non-hex id text -> key
    slow_names: dict[int, str]  # key -> non-hex id text
    # The keys sorted, and the node position of each: for looking ids up,
    # made on the first lookup (an open that only reads the branch needs none).
    _sorted: tuple[IntArray, IntArray] | None = None

    def _lookup(self) -> tuple[IntArray, IntArray]:
        if self._sorted is None:
            order = np.argsort(self.keys, kind="stable")
            self._sorted = (self.keys[order], order.astype(np.int64))
        return self._sorted

    def key_of(self, entry_id: str) -> int | None:
        """The key of an id, or None when the id cannot be in this tree."""
        if len(entry_id) == 8 and all(c in "0123456789abcdef" for c in entry_id):
            return int(entry_id, 16)
        return self.slow_ids.get(entry_id)

    def pos_of(self, entry_id: str) -> int | None:
        """The node position of an id, or None."""
        key = self.key_of(entry_id)
        if key is None:
            return None
        sorted_keys, sorted_pos = self._lookup()
        i = int(np.searchsorted(sorted_keys, key))
        if i < len(sorted_keys) and int(sorted_keys[i]) == key:
            return int(sorted_pos[i])
        return None

    def id_at(self, pos: int) -> str:
        """The id text of the node at ``pos``."""
        key = int(self.keys[pos])
        if key >= SLOW_KEY_BASE:
            return self.slow_names[key]
        return f"{key:08x}"

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self.pos_of(entry_id) is not None

    def __len__(self) -> int:
        return len(self.rows)

    def branch(self, leaf_pos: int) -> IntArray:
        """Node positions from the root to ``leaf_pos``, root first."""
        n = leaf_pos + 1
        parents = self.parent_pos[:n]
        # The common case, a linear chain in file order, needs no walk.
        if n and parents[0] == -1 and bool(np.all(parents[1:] == np.arange(n - 1))):
            return np.arange(n, dtype=np.int64)
        path: list[int] = []
        pos = leaf_pos
        pp = self.parent_pos
        while pos != -1:
            path.append(pos)
            pos = int(pp[pos])
        path.reverse()
        return np.asarray(path, dtype=np.int64)


class LogIndex:
    """Scanner records for every line of ``buf[0:size]`` and the tree they define."""

    def __init__(self, records: Records, size: int, *, from_cache: bool = False) -> None:
        self.records = records
        self.size = size
        # Records read from a cache file were validated by whichever process
        # wrote it; the cache's checks (samples, size, mtime) are not a scan.
        self.from_cache = from_cache
        self._tree: Tree | None = None

    @classmethod
    def build(cls, buf: LogBytes, size: int, known: tuple[int, Records] | None = None) -> LogIndex:
        """Scan ``buf[0:size]`` from the start.

        ``known`` is ``(start, records)`` for lines ``[start, size)`` already
        scanned (an open checks the last line first; it is often the largest).
        """
        if known is not None and 0 < known[0] < size:
            start, tail = known
            return cls(scanner.concat_records([buf.scan(0, start), tail]), size)
        return cls(buf.scan(0, size), size)

    def extend(self, buf: LogBytes, size: int) -> None:
        """Scan the bytes between the covered size and ``size`` and add their records."""
        if size <= self.size:
            return
        start = self.size
        head = self.records
        if len(head) and int(head["flags"][-1]) & scanner.FLAG_UNTERMINATED:
            # The covered region ended in a line without its newline: rescan it.
            start = int(head["offset"][-1])
            head = head[:-1]
        tail = buf.scan(start, size)
        rescanned = start < self.size
        self.records = scanner.concat_records([head, tail]) if len(head) else tail
        self.size = size
        kinds = tail["kind"]
        is_node = (kinds == scanner.KIND_MESSAGE) | (kinds == scanner.KIND_OTHER)
        if rescanned or bool(np.any(is_node & ((tail["flags"] & scanner.FLAG_ID) != 0))):
            self._tree = None  # new tree nodes (a checkpoint line adds none)

    def __len__(self) -> int:
        return len(self.records)

    def tree(self, buf: LogBytes, path: str | os.PathLike[str]) -> Tree:
        """The tree of tree-node lines, checked: raises CorruptSession on bad structure."""
        if self._tree is None:
            self._tree = build_tree(self.records, buf, path)
        return self._tree


class Problems:
    """Where structural problems go: raised at the first (``collect=False``) or all kept."""

    def __init__(
        self, path: str | os.PathLike[str], *, collect: bool = False, limit: int = 1000
    ) -> None:
        self.path = path
        self.collect = collect
        self.limit = limit
        self.found: list[tuple[int | None, str]] = []
        self.count = 0

    def report(self, line: int | None, problem: str) -> None:
        """One problem at a 1-based line (None: the file as a whole)."""
        if not self.collect:
            raise CorruptSession(self.path, line, problem)
        self.count += 1
        if len(self.found) < self.limit:
            self.found.append((line, problem))


def _line_problem(kind: int, flags: int, first: bool) -> str:
    if first:
        return "the first line is not a session header"
    if kind == scanner.KIND_INVALID:
        return "not a complete JSON object"
    if kind == scanner.KIND_UNTYPED:
        return "entry has no string 'type'"
    if kind == scanner.KIND_SESSION:
        return "a second session header"
    if not flags & scanner.FLAG_ID:
        return "message entry has no 'id'"
    if not flags & scanner.FLAG_PARENT:
        return "message entry has no 'parentId' (null for the first entry)"
    return "message has no valid role (system, user or assistant)"


def check_lines(
    records: Records,
    path: str | os.PathLike[str],
    first_line: int = 0,
    problems: Problems | None = None,
) -> None:
    """Report every line that is not an acceptable entry (raise at the first by default).

    ``records`` must not include a torn last line (the caller handles that).
    ``first_line`` is the 0-based line index of ``records[0]``; line 0 must be
    the session header.
    """
    if not len(records):
        return
    # One native pass finds whether anything is wrong (almost never); only
    # then are the problems worked out, from the first bad line on.
    first = scanner.first_bad_line(records, first_line == 0)
    if first is None:
        return
    sink = problems if problems is not None else Problems(path)
    kind = records["kind"]
    flags = records["flags"]
    bad = bad_line_mask(records[first:], first_line == 0 and first == 0)
    for i in np.flatnonzero(bad)[: sink.limit + 1]:
        row = first + int(i)
        sink.report(
            first_line + row + 1,
            _line_problem(int(kind[row]), int(flags[row]), first_line + row == 0),
        )


def _slow_field(buf: LogBytes, rec: Any, name: str) -> tuple[Any, str | None]:
    start = int(rec["offset"])
    value = orjson.loads(buf.view(start, start + int(rec["length"]))).get(name)
    if name == "id" and (not isinstance(value, str) or not value):
        return None, "entry 'id' must be a non-empty string"
    if name == "parentId" and value is not None and (not isinstance(value, str) or not value):
        return None, "'parentId' must be a non-empty string or null"
    return value, None


def build_tree(
    records: Records,
    buf: LogBytes,
    path: str | os.PathLike[str],
    problems: Problems | None = None,
) -> Tree:
    """Derive and check the entry tree: ids unique, parents exist, no cycles.

    By default the first problem raises CorruptSession; with a collecting
    :class:`Problems` every one is reported and the tree is still returned
    (with offending links cut), for ``awl reindex --verify``.
    """
    linked = scanner.link_tree(records)
    if linked is not None:
        # The common case, linked by the native scanner: hex ids, no
        # duplicates, every parent earlier in the file, so no cycle either.
        rows, parent_pos = linked
        return Tree(rows, records["id"][rows].astype(np.int64), parent_pos, {}, {})
    sink = problems if problems is not None else Problems(path)
    kind = records["kind"]
    flags = records["flags"]
    node_mask = ((kind == scanner.KIND_MESSAGE) | (kind == scanner.KIND_OTHER)) & (
        (flags & scanner.FLAG_ID) != 0
    )
    rows = np.flatnonzero(node_mask).astype(np.int64)
    nflags = flags[rows].astype(np.int64)
    keys = records["id"][rows].astype(np.int64)
    parents = records["parent"][rows].astype(np.int64)

    slow_ids: dict[str, int] = {}
    slow_names: dict[int, str] = {}

    def slow_key(text: str) -> int:
        key = slow_ids.get(text)
        if key is None:
            if len(text) == 8 and all(c in "0123456789abcdef" for c in text):
                return int(text, 16)
            key = SLOW_KEY_BASE + len(slow_ids)
            slow_ids[text] = key
            slow_names[key] = text
        return key

    def name_of(key: int) -> str:
        return slow_names.get(key, f"{key:08x}")

    for j in np.flatnonzero((nflags & scanner.FLAG_ID_HEX) == 0):
        row = int(rows[j])
        value, err = _slow_field(buf, records[row], "id")
        if err is not None:
            sink.report(row + 1, err)
            value = f"\0bad-id-line-{row + 1}"  # unique, cannot clash with a real id
        keys[j] = slow_key(value)
    has_parent = (nflags & scanner.FLAG_PARENT) != 0
    parents[~has_parent | ((nflags & scanner.FLAG_PARENT_NULL) != 0)] = NULL_KEY
    slow_parent = has_parent & (
        (nflags & (scanner.FLAG_PARENT_NULL | scanner.FLAG_PARENT_HEX)) == 0
    )
    for j in np.flatnonzero(slow_parent):
        row = int(rows[j])
        value, err = _slow_field(buf, records[row], "parentId")
        if err is not None:
            sink.report(row + 1, err)
        parents[j] = NULL_KEY if value is None else slow_key(value)

    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    dup = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    if len(dup):
        # Report each later line of a duplicate, naming the first line of its id.
        seen_first: dict[int, int] = {}
        reports = []
        for d in dup:
            a, b = int(order[d]), int(order[d + 1])
            key = int(keys[b])
            first = seen_first.setdefault(key, min(a, b))
            reports.append((max(a, b), key, first))
        for later, key, first in sorted(reports):
            sink.report(
                int(rows[later]) + 1,
                f"duplicate entry id {name_of(key)!r} (first on line {int(rows[first]) + 1})",
            )

    parent_pos = np.full(len(rows), -1, dtype=np.int64)
    has = parents != NULL_KEY
    if bool(has.any()):
        want = parents[has]
        idx = np.searchsorted(sorted_keys, want)
        idx_clipped = np.minimum(idx, max(len(sorted_keys) - 1, 0))
        found = (idx < len(sorted_keys)) & (sorted_keys[idx_clipped] == want)
        has_rows = np.flatnonzero(has)
        for miss in np.flatnonzero(~found):
            node = int(has_rows[int(miss)])
            sink.report(
                int(rows[node]) + 1, f"parentId {name_of(int(parents[node]))!r} names no entry"
            )
        parent_pos[has_rows[found]] = order[idx_clipped[found]]

    tree = Tree(rows, keys, parent_pos, slow_ids, slow_names, (sorted_keys, order.astype(np.int64)))
    forward = np.flatnonzero(parent_pos >= np.arange(len(rows)))
    if len(forward):
        _check_cycles(tree, [int(j) for j in forward], sink)
    return tree


def _check_cycles(tree: Tree, starts: list[int], sink: Problems) -> None:
    # Only nodes whose parent comes at or after them can be on a cycle; walk
    # from each, marking finished nodes so the total work stays linear.
    done: set[int] = set()
    pp = tree.parent_pos
    for start in starts:
        seen: list[int] = []
        on_path: set[int] = set()
        pos = start
        while pos != -1 and pos not in done:
            if pos in on_path:
                sink.report(
                    int(tree.rows[pos]) + 1, f"parent cycle through entry {tree.id_at(pos)!r}"
                )
                pp[pos] = -1  # cut the cycle so the rest can be walked
                break
            on_path.add(pos)
            seen.append(pos)
            pos = int(pp[pos])
        done.update(seen)


# ── the cache file ──

CACHE_MIN_BYTES = 1 << 20
"""Logs smaller than this get no index cache file.

Scanning a log this size takes well under a millisecond (``docs/performance.md``),
about what opening, checking and mapping its cache costs, while creating one
more file per log is what bulk reindexing paid most for."""


def wants_cache(size: int) -> bool:
    """Whether a log of ``size`` bytes keeps an index cache file.

    ``$AWL_INDEX_CACHE_MIN`` (bytes) overrides :data:`CACHE_MIN_BYTES`.
    """
    return size >= index_cache_min(CACHE_MIN_BYTES)


_T = TypeVar("_T")

_MAGIC = b"AWLIDX01"
# magic, version, record size, covered, dev, ino, count, mtime, path length,
# head and tail hash, CRC-32 of the records
_HEAD = struct.Struct("<8sIIQQQQqQ16s16sI")
_HEAD_SIZE = 128
# Version 2 ended with the log's real path (so a cache whose log is gone can
# be found and removed); version 3 adds the records' CRC-32, so a record
# damaged on disk is never believed.  Other versions are never read.
_CACHE_VERSION = 3
_SAMPLE = 4096


def _hash(buf: LogBytes, start: int, end: int) -> bytes:
    return hashlib.blake2b(buf.view(start, end), digest_size=16).digest()


def _crc(records: Records) -> int:
    return zlib.crc32(np.ascontiguousarray(records).view(np.uint8).data)


def _stamp(buf: LogBytes, covered: int) -> tuple[bytes, bytes]:
    return _hash(buf, 0, min(_SAMPLE, covered)), _hash(buf, max(0, covered - _SAMPLE), covered)


def save_cache(index: LogIndex, buf: LogBytes, st: os.stat_result, log_path: Path) -> Path | None:
    """Write the index as the log's cache file (atomically, 0600).

    Only complete lines are saved, so a line that later gains its newline is
    rescanned.  Returns the cache path, or None when it was not written: the
    log is under :data:`CACHE_MIN_BYTES`, or writing failed (a cache is never
    worth failing a session for).
    """
    records = index.records
    covered = index.size
    if len(records) and int(records["flags"][-1]) & scanner.FLAG_UNTERMINATED:
        covered = int(records["offset"][-1])
        records = records[:-1]
    if not wants_cache(covered):
        return None
    real = real_log_path(log_path)
    target = index_cache_path(log_path, real)
    head_hash, tail_hash = _stamp(buf, covered)
    header = _HEAD.pack(
        _MAGIC,
        _CACHE_VERSION,
        scanner.INDEX_DTYPE.itemsize,
        covered,
        st.st_dev,
        st.st_ino,
        len(records),
        st.st_mtime_ns,
        len(real),
        head_hash,
        tail_hash,
        _crc(records),
    ).ljust(_HEAD_SIZE, b"\0")
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        ensure_private_dir(target.parent)
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
            0o600,
        )
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(header)
                f.write(np.ascontiguousarray(records).tobytes())
                f.write(real)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return target


def load_cache(buf: LogBytes, st: os.stat_result, size: int, log_path: Path) -> LogIndex | None:
    """The cached index of a log if it matches the log's bytes, else None.

    The cached records are memory-mapped, not read.  A cache is accepted only
    for the same file (device and inode), when the log has not shrunk below
    what it covers, when samples of the log's first and last covered bytes
    hash as recorded, and, if the log has not grown, when its mtime is the
    one recorded (a rewrite in place of the same size).
    """
    if not wants_cache(size):
        return None  # a small log's cache, left by an older awl, is not read
    return _with_cache_file(log_path, lambda fd: _read_cache(fd, buf, st, size))


def cache_covers(buf: LogBytes, st: os.stat_result, size: int, log_path: Path) -> bool:
    """Whether the log's cache file is for these bytes and covers all ``size`` of them.

    Only the cache's header is read: its records and their CRC are checked
    when they are used (:func:`load_cache`), not to decide that there is
    nothing to save, which a writer's close asks each time.
    """
    if not wants_cache(size):
        return False
    head = _with_cache_file(log_path, lambda fd: _read_head(fd, buf, st, size))
    return head is not None and head[0] == size


def _with_cache_file(log_path: Path, read: Callable[[int], _T | None]) -> _T | None:
    """``read(fd)`` of the log's cache file; None when it is missing or unreadable."""
    try:
        # Non-blocking: a FIFO put there must not hang the open of a log.
        fd = os.open(index_cache_path(log_path), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return read(fd)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _read_head(
    fd: int, buf: LogBytes, st: os.stat_result, size: int
) -> tuple[int, int, int] | None:
    """(covered, record count, records' CRC-32) from a cache header that fits the log."""
    cst = os.fstat(fd)
    if not stat.S_ISREG(cst.st_mode):
        return None
    head = os.pread(fd, _HEAD_SIZE, 0)
    file_size = cst.st_size
    if len(head) < _HEAD_SIZE:
        return None
    (magic, version, recsize, covered, dev, ino, count, mtime, path_len, hh, th, crc) = (
        _HEAD.unpack(head[: _HEAD.size])
    )
    if (
        magic != _MAGIC
        or version != _CACHE_VERSION
        or recsize != scanner.INDEX_DTYPE.itemsize
        or file_size != _HEAD_SIZE + count * recsize + path_len
        or (dev, ino) != (st.st_dev, st.st_ino)
        or covered > size
        or (covered == size and mtime != st.st_mtime_ns)
        or (hh, th) != _stamp(buf, covered)
    ):
        return None
    return covered, count, crc


def _read_cache(fd: int, buf: LogBytes, st: os.stat_result, size: int) -> LogIndex | None:
    head = _read_head(fd, buf, st, size)
    if head is None:
        return None
    covered, count, crc = head
    if count == 0:
        records: Records = np.zeros(0, dtype=scanner.INDEX_DTYPE)
    else:
        # Mapped through the descriptor whose header was just checked (a
        # file object without a name: np.memmap then does not resolve a
        # path, which cost more than the mapping).
        with os.fdopen(fd, "rb", closefd=False) as f:
            records = np.memmap(
                f, dtype=scanner.INDEX_DTYPE, mode="r", offset=_HEAD_SIZE, shape=(count,)
            )
        # About 1.7 GB/s: 2 ms for the 64,000 lines of a typical 100 MB log.
        if _crc(records) != crc:
            return None
        last_end = int(records["offset"][-1]) + int(records["length"][-1]) + 1
        if last_end != covered or int(records["offset"][0]) != 0:
            return None
    return LogIndex(records, covered, from_cache=True)


CACHE_TMP_GRACE = 3600.0
"""Seconds after which a cache file's temporary (``<name>.<pid>.tmp``) is
taken for the leftover of a process that died writing it: a live one exists
for the milliseconds a write takes."""


_CACHE_NAME = re.compile(r"^[0-9a-f]{32}\.idx$")
_CACHE_TMP_NAME = re.compile(r"^[0-9a-f]{32}\.idx\.\d+\.tmp$")


def stale_caches() -> list[tuple[Path, str]]:
    """Index cache files that no log can use, each with the reason.

    A cache records its log's real path: it is stale when that log no longer
    exists, is another file (device and inode), or is under the cache
    threshold; when it was written by another cache version; when it is not
    a cache or is cut short; and a temporary left by a dead writer (older
    than :data:`CACHE_TMP_GRACE`) is stale too.  Files whose name is not a
    cache's, symbolic links and anything that cannot be read are left alone.
    """
    folder = index_cache_dir()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []  # no cache folder, or one awl cannot read: caches are never needed
    now = time.time()
    out: list[tuple[Path, str]] = []
    for name in names:
        p = folder / name
        if _CACHE_TMP_NAME.match(name):
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > CACHE_TMP_GRACE:
                out.append((p, "a cache write whose process died"))
        elif _CACHE_NAME.match(name):
            why = _stale_reason(p)
            if why is not None:
                out.append((p, why))
    return out


def _stale_reason(p: Path) -> str | None:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        head = os.pread(fd, _HEAD_SIZE, 0)
        if len(head) < _HEAD_SIZE or head[:8] != _MAGIC:
            return "not an index cache"
        (_, version, recsize, _, dev, ino, count, _, path_len, _, _, _) = _HEAD.unpack(
            head[: _HEAD.size]
        )
        if version != _CACHE_VERSION:
            return f"cache version {version}, not {_CACHE_VERSION}"
        path_at = _HEAD_SIZE + count * recsize
        if path_len == 0 or st.st_size != path_at + path_len:
            return "its size does not match its header"
        real = os.pread(fd, path_len, path_at)
    except OSError:
        return None
    finally:
        os.close(fd)
    log = real.decode("utf-8", "backslashreplace")  # for messages: always valid UTF-8
    if index_cache_path(log, real).name != p.name:
        return f"its name is not the one of its log {log}"
    try:
        log_st = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return f"its log {log} no longer exists"
    except OSError:
        return None  # say, a folder that cannot be searched: not proof of anything
    if (log_st.st_dev, log_st.st_ino) != (dev, ino):
        return f"its log {log} is another file now"
    if not wants_cache(log_st.st_size):
        return f"its log {log} is under the cache threshold"
    return None
