"""One log's index, and the one path to a current one.

An :class:`IndexKeeper` holds the index of the log it was made for: read
from the cache file where that fits the log's bytes, scanned otherwise,
extended past what it covers as the log grows, every row checked once
(:func:`awl.store._lines.check_lines`) before it is used, and saved back
when that is asked for.  An index is a cache of the log: when in doubt
(:meth:`IndexKeeper.fresh`), the log is scanned again.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import CorruptSession
from ..paths import index_cache_dir, index_cache_path
from ._fs import Env
from ._index import LogIndex
from ._index_cache import cache_covers, load_cache, save_cache, wants_cache
from ._lines import check_lines
from ._logmap import LogMap
from ._reader import StaleIndex
from ._scanner_abi import FLAG_UNTERMINATED, Records
from ._tree import Tree

_T = TypeVar("_T")


_FOLDERS_FAULT = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM))
"""Errors writing a cache file that are its folder's (or its disk's), not the file's."""


class IndexKeeper:
    """The index of the log at ``path``.

    ``cache`` says where the index in use came from: ``"none"`` (none made
    yet), ``"loaded"`` (the cache file), ``"extended"`` (the cache file and
    a scan of what follows), ``"built"`` (a scan), ``"rebuilt"`` (a scan
    after a cache file was found lying).  ``saved`` is whether this keeper
    wrote the cache file; ``save_error`` why it last could not (the disk
    full), else None.
    """

    def __init__(self, path: Path, env: Env) -> None:
        self.path = path
        self.env = env
        self.index: LogIndex | None = None
        self.cache = "none"
        self.saved = False
        self.save_error: str | None = None
        self._checked = 0  # rows already checked by check_lines
        self._dirty = False  # the index differs from the cache file
        # The last line's records as an open scanned them, for the scan that
        # often follows (the last line is often the largest).
        self._last: tuple[int, Records, int] | None = None

    @property
    def from_cache(self) -> bool:
        """Whether the index in use was read from a cache file (believed, not scanned)."""
        return self.index is not None and self.index.from_cache

    def know_last_line(self, offset: int, records: Records, size: int) -> None:
        """The records of the line at ``offset`` of a log of ``size`` bytes, already scanned."""
        self._last = (offset, records, size)

    def current(self, log: LogMap, fd: int, size: int) -> tuple[LogIndex, Tree]:
        """The index of the log's first ``size`` bytes and its tree, checked.

        Raises CorruptSession for a line or a tree the log must not have.
        """
        if self.index is None:
            cached = load_cache(log, self.env.fstat(fd), size, self.path)
            if cached is not None:
                self.index, self.cache = cached, "loaded"
                if cached.size < size:
                    self._dirty, self.cache = _extended(cached, log, size), "extended"
            else:
                self.index = LogIndex.build(log, size, self._known(size))
                self._dirty, self.cache = True, "built"
            self._last = None
            self._checked = 0
        elif self.index.size < size:
            # A line that lacked its newline is scanned again by extend().
            self._checked = min(self._checked, max(len(self.index) - 1, 0))
            self.index.extend(log, size)
            self._dirty = True
        index = self.index
        if self._checked < len(index):
            check_lines(index.records[self._checked :], self.path, self._checked, log=log)
            self._checked = len(index)
        return index, index.tree(log, self.path)

    def use(self, log: LogMap, fd: int, size: int, fn: Callable[[LogIndex, Tree], _T]) -> _T:
        """``fn(index, tree)`` with the current index; once more with a fresh scan when
        the index was found lying.

        A record that does not match the log (StaleIndex) means the cache
        lied; while a cache file's index is in use, any problem found is
        taken for such a lie too, and the fresh scan says what is real.
        """
        try:
            return fn(*self.current(log, fd, size))
        except StaleIndex:
            pass
        except CorruptSession:
            if not self.from_cache:
                raise
        try:
            return fn(*self.fresh(log, fd, size))
        except StaleIndex:
            raise CorruptSession(
                self.path, None, "an entry does not match the index (was the file changed?)"
            ) from None

    def fresh(self, log: LogMap, fd: int, size: int) -> tuple[LogIndex, Tree]:
        """A scan of the log, whatever the cache file says (a record was found lying)."""
        self.index = LogIndex.build(log, size)
        self._dirty, self._checked, self._last = True, 0, None
        self.cache = "rebuilt"
        return self.current(log, fd, size)

    def _known(self, size: int) -> tuple[int, Records] | None:
        if self._last is not None and self._last[2] == size:
            return self._last[:2]
        return None

    def refresh(self, log: LogMap, fd: int, size: int, *, trust_header: bool) -> bool:
        """Make the cache file cover the whole log; True when it was (re)written.

        The index in memory is extended and saved if it changed.  Without
        one: with ``trust_header`` (a close), a cache file whose header fits
        and covers the log is left as it is, its records not read (their
        CRC-32 is a pass over them); otherwise the cache file is read and
        checked, extended, or the log scanned, and the result saved.
        """
        if not wants_cache(size):
            self._dirty = False  # nothing to save: do not index just for that
            return False
        st = self.env.fstat(fd)
        if self.index is None:
            if trust_header and cache_covers(log, st, size, self.path):
                return False
            cached = load_cache(log, st, size, self.path)
            if cached is not None and cached.size == size:
                # Kept, so that a close does not read the cache again.
                self.index, self.cache, self._dirty, self._checked = cached, "loaded", False, 0
                return False
            dirty = True
            if cached is not None:
                dirty, self.cache = _extended(cached, log, size), "extended"
            else:
                cached = LogIndex.build(log, size, self._known(size))
                self.cache = "built"
            self.index, self._dirty, self._checked = cached, dirty, 0
        elif self.index.size < size:
            self.index.extend(log, size)
            self._dirty = True
        return self.save(log, fd, size) if self._dirty else False

    def save(self, log: LogMap, fd: int, size: int) -> bool:
        """Write the index in memory, extended to ``size``, as the cache file
        (when the log is large enough to keep one); True when written."""
        self.save_error = None
        if self.index is None:
            return False
        self._dirty = False
        if not wants_cache(size):
            return False  # no cache file for a log this small: nor the scan for one
        if self.index.size < size:
            self.index.extend(log, size)
        st = self.env.fstat(fd)
        try:
            saved = save_cache(self.index, log, st, self.path, self.env)
        except OSError as exc:
            why = exc.strerror or str(exc)
            if exc.errno in _FOLDERS_FAULT:
                # The folder, not the file: the same for every log (a full disk).
                self.save_error = f"{index_cache_dir()}: cannot write index caches: {why}"
            else:
                self.save_error = f"{index_cache_path(self.path)}: cannot write this cache: {why}"
            return False
        if saved is None:
            return False
        self.saved, self.save_error = True, None
        return True

    @property
    def dirty(self) -> bool:
        """Whether the index in memory holds what the cache file does not."""
        return self._dirty

    def drop(self) -> None:
        """Forget the index (the log is being closed)."""
        self.index = None


def _extended(cached: LogIndex, log: LogMap, size: int) -> bool:
    """Extend an index read from the cache file to ``size``; whether the file should
    be written again.  A cache stops short of a last line without its newline
    (it may yet grow): when that line is all that follows, the file on disk is
    what a new one would be."""
    covered = cached.size
    cached.extend(log, size)
    records = cached.records
    return not (
        len(records)
        and int(records["flags"][-1]) & FLAG_UNTERMINATED
        and int(records["offset"][-1]) == covered
    )
