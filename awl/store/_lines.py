"""Which lines of a log are acceptable entries, and where problems go.

An open stops at the first problem (:class:`CorruptSession`); verification
collects every one (:class:`Problems` with ``collect=True``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import CorruptSession
from . import scanner
from ._invalid import INVALID, invalid_line
from ._numpy import np
from ._scanner_abi import Records
from ._scanner_fallback import bad_line_mask

if TYPE_CHECKING:
    from ._logmap import LogMap


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


def _line_problem(kind: int, flags: int, first: bool, raw: memoryview | None = None) -> str:
    if first:
        return "the first line is not a session header"
    if kind == scanner.KIND_INVALID:
        return INVALID if raw is None else invalid_line(raw)
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
    log: LogMap | None = None,
) -> None:
    """Report every line that is not an acceptable entry (raise at the first by default).

    ``records`` must not include a torn last line (the caller handles that).
    ``first_line`` is the 0-based line index of ``records[0]``; line 0 must be
    the session header.  With ``log`` (the bytes the records were scanned from),
    an invalid line's problem says whether its bytes are UTF-8.
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
        raw = None
        if log is not None and int(kind[row]) == scanner.KIND_INVALID:
            at = int(records["offset"][row])
            raw = log.view(at, at + int(records["length"][row]))
        sink.report(
            first_line + row + 1,
            _line_problem(int(kind[row]), int(flags[row]), first_line + row == 0, raw),
        )
