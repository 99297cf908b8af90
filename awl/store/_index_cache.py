"""The index cache file: a log's line index saved between opens.

Saved under ``$XDG_CACHE_HOME/awl/index/`` for logs of 1 MiB and more,
memory-mapped on the next open, and believed only for the same bytes
(``docs/format.md``, "The index cache").  A cache is never worth failing a
session for: any problem saving one is ignored, and any doubt reading one
means scanning the log instead.
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
from pathlib import Path
from typing import TypeVar

from ..environment import index_cache_min
from ..paths import index_cache_dir, index_cache_path, real_log_path
from . import scanner
from ._fs import Env, make_private_dirs, write_all
from ._index import LogIndex
from ._numpy import np
from ._scanner_abi import Records
from ._tree import LogBytes

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


def save_cache(
    index: LogIndex, buf: LogBytes, st: os.stat_result, log_path: Path, env: Env
) -> Path | None:
    """Write the index as the log's cache file (atomically, 0600).

    Only complete lines are saved, so a line that later gains its newline is
    rescanned.  Returns the cache path, or None when the log is under
    :data:`CACHE_MIN_BYTES`.  Raises OSError when writing failed, leaving no
    file behind (a caller records it: a cache is never worth failing a
    session for).  Not synced: a cache lost to a power cut is rebuilt, and
    one cut short there is never believed.
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
        make_private_dirs(env, target.parent)
        fd = env.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
            0o600,
        )
        try:
            env.fchmod(fd, 0o600)
            for piece in (header, np.ascontiguousarray(records).view(np.uint8).data, real):
                write_all(env, fd, piece)
        finally:
            env.close(fd)
        env.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            env.unlink(tmp)
        raise
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
