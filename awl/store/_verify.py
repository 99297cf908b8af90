"""Verification of a whole log: every line, the tree, every entry's schema, and
what the last checkpoint claims.

Unlike an open, which stops at the first problem and trusts what a
checkpoint summarizes, verification reads everything and reports every
problem it finds with its line number.  A checkpoint's claims are checked
as a difference: the state an open believed, against the state derived
afresh from the whole log (:func:`checkpoint_disagreement`).  It never
writes, and never reads a cache file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CorruptSession, FormatError, SessionError
from . import scanner
from ._checkpoint import checkpoint_fits, checkpoint_locates
from ._codec import load_object, parse_object
from ._derive import from_index
from ._entries import RECENT, Checkpoint, SessionHeader
from ._fs import default_env, open_regular
from ._ids import IdPermutation
from ._index import LogIndex
from ._index_keeper import IndexKeeper
from ._lines import Problems, check_lines
from ._logfile import ForeignLog, LogFile, read_header_fd
from ._logmap import LogMap
from ._numpy import np
from ._recovery import recover
from ._scanner_abi import Records
from ._state import SessionState
from ._tree import SLOW_KEY_BASE, build_tree


@dataclass(slots=True)
class VerifyReport:
    """What verification of one log found."""

    path: Path
    size: int = 0
    lines: int = 0
    entries: int = 0
    torn: int = 0  # bytes of a torn last line (a writer's open trims it; not an error)
    problems: list[tuple[int | None, str]] = field(default_factory=list)
    problem_count: int = 0

    @property
    def ok(self) -> bool:
        """No problem found (a torn tail is not one)."""
        return self.problem_count == 0


def verify_log(path: str | os.PathLike[str], *, limit: int = 1000) -> VerifyReport:
    """Check every line of a log with the native validator, the tree and every entry's schema.

    SessionError when the log cannot be opened or is no regular file.
    """
    p = Path(path)
    report = VerifyReport(p)
    sink = Problems(p, collect=True, limit=limit)
    env = default_env()
    try:
        fd = open_regular(env, p)
    except OSError as exc:
        raise SessionError(f"{p}: cannot open: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        report.size = size
        if size == 0:
            sink.report(None, "empty file, not a session log")
            return _finish(report, sink)
        try:
            read_header_fd(fd, p, env)
        except ForeignLog as exc:
            # Its lines are another tool's, not problems of an awl log.
            sink.report(None, exc.problem)
            return _finish(report, sink)
        except CorruptSession:
            pass  # named below, with every other problem
        has_checkpoint = False
        log = LogMap.for_reader(fd, size, p)  # safe against a writer trimming meanwhile
        try:
            records = log.scan(0, len(log))
            if len(records) > 1 and int(records["kind"][-1]) == scanner.KIND_INVALID:
                report.torn = int(records["length"][-1])
                records = records[:-1]
            report.lines = len(records)
            check_lines(records, p, 0, sink, log)
            tree = build_tree(records, log, p, sink)
            report.entries = len(tree)
            _check_entries(records, log, sink)
            has_checkpoint = bool(np.any(records["kind"] == scanner.KIND_CHECKPOINT))
        finally:
            log.close()
    finally:
        env.close(fd)
    if sink.count == 0 and has_checkpoint:  # without one, an open trusts nothing
        _check_checkpoint_claims(p, sink)
    return _finish(report, sink)


def _check_checkpoint_claims(p: Path, sink: Problems) -> None:
    """What an open trusts the last checkpoint for, against the log itself."""
    try:
        log = LogFile.open(p, read_only=True, env=default_env())
        try:
            found = recover(log, IndexKeeper(p, log.env))
            disagreement = checkpoint_disagreement(log, found.state)
        finally:
            log.close()
    except SessionError as exc:  # sound line by line, yet an open refuses it
        sink.report(None, str(exc))
        return
    if disagreement is not None:
        sink.report(*disagreement)


_CLAIMS = (
    ("leaf", lambda s: s.leaf),
    ("message count", lambda s: s.message_count),
    ("first prompt", lambda s: s.first_prompt),
    ("recent messages at", lambda s: [(o, n) for o, n, _, _ in s.recent[-RECENT:]]),
    ("active model", lambda s: (s.provider, s.model)),
    ("entry count", lambda s: s.entry_count),
    ("last activity", lambda s: s.last_activity),
)


def checkpoint_disagreement(log: LogFile, believed: SessionState) -> tuple[int, str] | None:
    """(line, how) the state an open ``believed`` from its last checkpoint differs
    from the state of the whole log, or None (also when it believed none).

    Everything an open takes from a checkpoint (the leaf, the message count,
    the first prompt, the recent messages' locations, the active model, the
    entry count, the last activity, the free id window) is derived again
    from a fresh scan of the whole log: a checkpoint that lies consistently
    passes every check an open makes, and a writer would carry the lie into
    the next one.
    """
    if believed.mark.offset is None or log.fd is None:
        return None
    mm = log.map()
    # Fresh: a cache file is what verification must not trust.
    keeper = IndexKeeper(log.path, log.env)
    index, tree = keeper.fresh(mm, log.fd, log.size)
    actual = from_index(log.header, index, tree, mm, log.path, None)
    diffs = [
        f"{name} {claim(believed)!r}, the log {claim(actual)!r}"
        for name, claim in _CLAIMS
        if claim(believed) != claim(actual)
    ]
    if believed.free_ids is not None:
        # Every id, those after the checkpoint included: the open moved the
        # window past the ones it found there.
        lo, hi = believed.free_ids
        keys = tree.keys[tree.keys < SLOW_KEY_BASE]
        numbers = IdPermutation(log.header.id).numbers_of(keys)
        used = int(np.count_nonzero((numbers >= lo) & (numbers < hi)))
        if used:
            diffs.append(f"ids {[lo, hi]} are free, the log uses {used} of them")
    if not diffs:
        return None
    row = _row_of(index, believed.mark.offset)
    return row + 1, "the checkpoint says " + "; ".join(diffs) + " (a writer would copy it)"


def _row_of(index: LogIndex, offset: int) -> int:
    return int(np.searchsorted(index.records["offset"], offset))


def _check_entries(records: Records, log: LogMap, sink: Problems) -> None:
    kinds = records["kind"]
    offsets = records["offset"]
    lengths = records["length"]
    parseable = (kinds != scanner.KIND_INVALID) & (kinds != scanner.KIND_BLANK)
    behind = log.passing()
    header: SessionHeader | None = None
    named = {line for line, _ in sink.found}  # lines the line check reported
    body = int(offsets[1]) if len(records) > 1 else 0  # where the header line ends
    for i in range(len(records)):
        if not parseable[i]:
            continue
        o, n = int(offsets[i]), int(lengths[i])
        behind.at(o)
        try:
            entry = parse_object(load_object(log.view(o, o + n)))
        except FormatError as exc:
            if i + 1 not in named:  # the same fault in other words adds nothing
                sink.report(i + 1, str(exc))
            continue
        if i == 0 and isinstance(entry, SessionHeader):
            header = entry
        if not isinstance(entry, Checkpoint):
            continue
        if entry.offset != o:
            sink.report(
                i + 1,
                f"checkpoint records offset {entry.offset} but is at offset {o} "
                "(readers ignore it)",
            )
        elif entry.line != i:
            # The offset fits, so readers believe it, and count the lines
            # after it from its number: a writer would copy the error on.
            sink.report(
                i + 1,
                f"checkpoint records line {entry.line + 1} but is line {i + 1} "
                "(readers number the lines after it from it)",
            )
        elif header is not None and not (
            checkpoint_fits(entry, o, body, header) and checkpoint_locates(entry, log, body)
        ):
            sink.report(
                i + 1,
                "checkpoint does not match the lines before it (readers ignore it)",
            )


def _finish(report: VerifyReport, sink: Problems) -> VerifyReport:
    report.problems = list(sink.found)
    report.problem_count = sink.count
    return report
