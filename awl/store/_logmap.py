"""The bytes of a log as an open sees them: memory-mapped, safely.

A writer that trims a torn tail shrinks the file, and a process that touches
a mapped page past the new end of file dies of SIGBUS.  Only the last line
of a log is ever cut (a torn tail, or an append rolled back), so a reader
maps every line but the last and reads the last one with ``pread``: nothing
it touches can vanish under it.  A writer holds the lock, is the only one
who cuts, and maps the whole file.

A pass over a large log (an index scan, verification, ``awl show``) drops
the pages it has gone past from this process every :data:`RELEASE_WINDOW`
bytes (:meth:`LogMap.release`), so that what a command holds does not grow
with the log: the pages stay in the page cache and come back on the next
touch without a read.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from typing import TYPE_CHECKING

from ..errors import SessionError

if TYPE_CHECKING:
    from ._scanner_abi import Records

# The scanner (and numpy with it) is imported where a method needs it: a
# search reads logs through this map without either.

_CHUNK = 1 << 16

RELEASE_WINDOW = 64 << 20
"""Bytes a pass over a log maps before it releases them again."""

_PAGE = mmap.PAGESIZE


def _last_line_start(fd: int, size: int) -> int | None:
    """Where the file's last line starts (after the last newline before its final
    byte); None if the file is shorter than ``size`` now (cut meanwhile)."""
    pos, step = size - 1, 4096  # most last lines are short: read a page first
    while pos > 0:
        lo = max(0, pos - step)
        chunk = os.pread(fd, pos - lo, lo)
        if len(chunk) < pos - lo:
            return None
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return lo + nl + 1
        pos, step = lo, _CHUNK
    return 0


def _find(buf: mmap.mmap | bytes, sub: bytes, start: int, end: int) -> int:
    # A byte is found with memchr either way; a longer needle with memmem
    # (scanner.find), as CPython's skip search crawls through JSON, where
    # the needle's first and last bytes, quotes, are everywhere.
    if len(sub) <= 1:
        return buf.find(sub, start, end)
    from . import scanner

    return scanner.find(buf, sub, start, end)


def _last_solid_byte(fd: int, start: int, end: int) -> bytes | None:
    """The last byte of ``[start, end)`` that is not JSON white space (``b""`` when
    there is none), read backwards a chunk at a time; None if the file is
    shorter than ``end`` now (cut meanwhile)."""
    pos = end
    while pos > start:
        lo = max(start, pos - _CHUNK)
        raw = os.pread(fd, pos - lo, lo)
        if len(raw) < pos - lo:
            return None
        chunk = raw.rstrip(_JSON_SPACE)
        if chunk:
            return chunk[-1:]
        pos = lo
    return b""


def _pread_all(fd: int, n: int, offset: int) -> bytes:
    parts = []
    while n > 0:
        chunk = os.pread(fd, min(n, 1 << 24), offset)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


TAIL_READ_LIMIT = 1 << 20
"""A reader reads a last line longer than this only when it can be whole."""

_JSON_SPACE = b" \t\r\n"

_LOOKS = 64
"""Times a reader looks at a log cut under it again before it gives up."""


def torn_tail(fd: int, size: int) -> int:
    """Bytes at the end of ``fd``'s first ``size`` that are a torn tail known
    without reading it into memory, else 0.

    A writer's open maps the whole log, and finding and scanning its last
    line there would bring every page of a torn tail into the process
    however long it is (a power loss can leave gigabytes of NULs).  So a last
    line over :data:`TAIL_READ_LIMIT` is judged from its end, with bounded
    reads: when it holds a byte that is not white space and the last such
    byte is not ``}``, it cannot be one JSON object, which is the scanner's
    verdict too.  Anything else (a short last line, one that may be whole, a
    blank one, the header line, a file shorter than ``size`` now) is 0: the
    open scans it.
    """
    split = _last_line_start(fd, size) if size else 0
    if not split or size - split <= TAIL_READ_LIMIT:
        return 0
    solid = _last_solid_byte(fd, split, size)
    return size - split if solid and solid != b"}" else 0


class LogMap:
    """``[0, split)`` memory-mapped, ``[split, size)`` held as bytes read with pread.

    ``cut`` counts bytes after ``size`` a reader left unread: a last line
    that cannot be a complete JSON object (a torn tail, which a writer's
    open would trim), however long, costs a reader no memory.
    """

    def __init__(self, mm: mmap.mmap | None, split: int, tail: bytes = b"", cut: int = 0) -> None:
        self._mm = mm
        self.split = split
        self._tail = tail
        self.size = split + len(tail)
        self.cut = cut

    @classmethod
    def for_reader(cls, fd: int, size: int, path: str | os.PathLike[str] | None = None) -> LogMap:
        """Map all but the last line of ``fd``'s first ``size`` bytes.

        The last line is read with pread unless it is long and cannot be a
        complete object, which must end with ``}`` (then followed only by
        JSON white space): its bytes are left out, and counted in ``cut``.
        A file cut while it is looked at (a writer trimming a torn tail, which
        may then be written again) is looked at afresh, as it is then: a last
        line judged on bytes of two different files could hide all the others.
        """
        for _ in range(_LOOKS):
            found = cls._look(fd, size)
            if found is not None:
                return found
            size = os.fstat(fd).st_size
        raise SessionError(
            f"{path or 'the log'}: cut {_LOOKS} times while it was read "
            "(another program keeps rewriting it?)"
        )

    @classmethod
    def _look(cls, fd: int, size: int) -> LogMap | None:
        split = _last_line_start(fd, size) if size else 0
        if split is None:
            return None
        cut = 0
        if size - split > TAIL_READ_LIMIT:
            # Only a line whose last byte that is not white space is "}" can
            # be one JSON object.
            solid = _last_solid_byte(fd, split, size)
            if solid is None:
                return None
            if solid != b"}":
                cut, size = size - split, split
        tail = _pread_all(fd, size - split, split)
        if len(tail) < size - split:
            return None
        # [0, split) is whole lines, which nobody cuts: it stays mapped safely.
        mm = mmap.mmap(fd, split, access=mmap.ACCESS_READ) if split else None
        return cls(mm, split, tail, cut)

    @classmethod
    def whole(cls, fd: int, size: int) -> LogMap:
        """Map the whole of ``fd``'s first ``size`` bytes (a writer's view)."""
        return cls(mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else None, size)

    def __len__(self) -> int:
        return self.size

    def view(self, start: int, end: int) -> memoryview:
        """The bytes ``[start, end)`` without copying where they lie in one part."""
        end = min(end, self.size)
        if end <= start:
            return memoryview(b"")
        if end <= self.split:
            assert self._mm is not None
            return memoryview(self._mm)[start:end]
        if start >= self.split:
            return memoryview(self._tail)[start - self.split : end - self.split]
        assert self._mm is not None
        return memoryview(self._mm[start : self.split] + self._tail[: end - self.split])

    def byte(self, pos: int) -> int:
        """One byte."""
        if pos < self.split and self._mm is not None:
            return self._mm[pos]
        return self._tail[pos - self.split]

    def find(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        """Like bytes.find over the whole log (``sub`` must not span the two parts:
        a line never does)."""
        end = min(self.size, self.size if end is None else end)
        if start > end:
            return -1
        if start < self.split and self._mm is not None:
            hit = _find(self._mm, sub, start, min(end, self.split))
            if hit >= 0 or end <= self.split:
                return hit
        lo = max(start, self.split)
        hit = _find(self._tail, sub, lo - self.split, end - self.split)
        return hit + self.split if hit >= 0 else -1

    def rfind(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        """Like bytes.rfind over the whole log."""
        end = self.size if end is None else end
        if end > self.split:
            hit = self._tail.rfind(sub, max(start, self.split) - self.split, end - self.split)
            if hit >= 0:
                return hit + self.split
        if start < self.split and self._mm is not None:
            return self._mm.rfind(sub, start, min(end, self.split))
        return -1

    def scan(self, start: int, end: int) -> Records:
        """Scanner records of the lines in ``[start, end)`` (a line start).

        A range longer than :data:`RELEASE_WINDOW` is scanned a window at a
        time, each window's pages released once it is scanned.
        """
        from . import scanner

        parts = []
        if start < self.split and self._mm is not None:
            parts.extend(self._scan_windows(self._mm, start, min(end, self.split)))
        if end > self.split and self._tail:
            tail = scanner.scan(self._tail, max(start, self.split) - self.split, end - self.split)
            tail["offset"] += self.split
            parts.append(tail)
        return parts[0] if len(parts) == 1 else scanner.concat_records(parts)

    def _scan_windows(self, mm: mmap.mmap, start: int, end: int) -> list[Records]:
        from . import scanner

        parts = []
        while end - start > RELEASE_WINDOW:
            # Windows end at a line start: the scanner starts at one.
            nl = mm.find(b"\n", start + RELEASE_WINDOW - 1, end)
            if nl < 0 or nl + 1 >= end:
                break
            parts.append(scanner.scan(mm, start, nl + 1))
            self.release(start, nl + 1)
            start = nl + 1
        # The last window stays: an open reads its last lines next.
        parts.append(scanner.scan(mm, start, end))
        return parts

    def release(self, start: int, end: int) -> None:
        """Drop the mapped pages of ``[start, end)`` from this process (a hint).

        Nothing is lost: the file's pages stay in the page cache and are
        mapped again when touched.  Pages only partly in the range go too.
        """
        end = min(end, self.split)
        if self._mm is None or end <= start or not hasattr(mmap, "MADV_DONTNEED"):
            return
        lo = start - start % _PAGE
        # A hint: a mapping closed meanwhile, or a kernel that refuses, changes nothing.
        with contextlib.suppress(ValueError, OSError):
            self._mm.madvise(mmap.MADV_DONTNEED, lo, end - lo)

    def find_last(self, type_name: str, start: int, end: int) -> int | None:
        """The offset of the last line in ``[start, end)`` whose type is ``type_name``."""
        from . import scanner

        if end > self.split and self._tail:
            lo = max(start, self.split) - self.split
            hit = scanner.find_last(self._tail, type_name, lo, end - self.split)
            if hit is not None:
                return hit + self.split
        if start < self.split and self._mm is not None:
            return scanner.find_last(self._mm, type_name, start, min(end, self.split))
        return None

    def pieces(self, start: int, end: int) -> list[tuple[mmap.mmap | bytes, int, int, int]]:
        """``[start, end)`` as the buffers that hold it: ``(buffer, its first byte's
        offset in the log, start, end)`` with start and end in the buffer's own
        terms; the mapped lines, then the last line read with pread (a line
        never spans the two)."""
        end = min(end, self.size)
        out: list[tuple[mmap.mmap | bytes, int, int, int]] = []
        if start < min(end, self.split) and self._mm is not None:
            out.append((self._mm, 0, start, min(end, self.split)))
        if end > self.split and self._tail:
            out.append(
                (self._tail, self.split, max(start, self.split) - self.split, end - self.split)
            )
        return out

    def passing(self, start: int = 0) -> Passing:
        """A tracker for one pass from ``start`` (either way) that releases what it has passed."""
        return Passing(self, start)

    def close(self) -> None:
        """Unmap (a view still held elsewhere keeps the map alive until it goes)."""
        if self._mm is not None:
            with contextlib.suppress(BufferError):
                self._mm.close()
            self._mm = None


class Passing:
    """Releases a log's pages behind a pass, a window at a time.

    Call :meth:`at` with each position the pass reads.  The pass may go
    either way (the active-model walk goes backwards); what lies between
    the last release and a position a window away is released.
    """

    def __init__(self, log: LogMap, start: int) -> None:
        self.log = log
        self._mark = start

    def at(self, pos: int) -> None:
        """The pass is about to read at ``pos``."""
        if pos - self._mark >= RELEASE_WINDOW:
            self.log.release(self._mark, pos)
            self._mark = pos
        elif self._mark - pos >= RELEASE_WINDOW:
            # Going backwards: what lies after pos was read already.
            self.log.release(pos, self._mark)
            self._mark = pos
