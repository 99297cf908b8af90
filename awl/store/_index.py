"""The line index of a log: one scanner record per line, and the tree they define.

The records (offset, length, kind, role, id, parent, flags) are built by
the scanner without parsing JSON in Python.  The log is the only truth: an
index is a cache of it, rebuilt whenever it does not match
(:mod:`._index_keeper`), saved in a file between opens (:mod:`._index_cache`).
"""

from __future__ import annotations

import os

from . import scanner
from ._numpy import np
from ._scanner_abi import Records
from ._tree import LogBytes, Tree, build_tree


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
