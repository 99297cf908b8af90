"""Verification of a whole log: every line, the tree, every entry's schema.

Unlike an open, which stops at the first problem and trusts what a
checkpoint summarizes, verification reads everything and reports every
problem it finds with its line number.  It never writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import scanner
from ._numpy import np
from .errors import FormatError, SessionError
from .format import (
    Checkpoint,
    SessionHeader,
    checkpoint_fits,
    checkpoint_locates,
    load_object,
    parse_object,
)
from .index import Problems, Records, build_tree, check_lines
from .logmap import LogMap
from .manager import SessionManager, open_log


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
    """Check every line of a log with the native validator, the tree and every entry's schema."""
    p = Path(path)
    report = VerifyReport(p)
    sink = Problems(p, collect=True, limit=limit)
    fd = open_log(p)
    try:
        size = os.fstat(fd).st_size
        report.size = size
        if size == 0:
            sink.report(None, "empty file, not a session log")
            return _finish(report, sink)
        has_checkpoint = False
        log = LogMap.for_reader(fd, size)  # safe against a writer trimming meanwhile
        try:
            records = log.scan(0, len(log))
            if len(records) > 1 and int(records["kind"][-1]) == scanner.KIND_INVALID:
                report.torn = int(records["length"][-1])
                records = records[:-1]
            report.lines = len(records)
            check_lines(records, p, 0, sink)
            tree = build_tree(records, log, p, sink)
            report.entries = len(tree)
            _check_entries(records, log, sink)
            has_checkpoint = bool(np.any(records["kind"] == scanner.KIND_CHECKPOINT))
        finally:
            log.close()
    finally:
        os.close(fd)
    if sink.count == 0 and has_checkpoint:  # without one, an open trusts nothing
        _check_checkpoint_claims(p, sink)
    return _finish(report, sink)


def _check_checkpoint_claims(p: Path, sink: Problems) -> None:
    """What an open trusts the last checkpoint for, against the log itself."""
    try:
        with SessionManager.open(p, read_only=True) as m:
            found = m.checkpoint_disagreement()
    except SessionError as exc:  # sound line by line, yet an open refuses it
        sink.report(None, str(exc))
        return
    if found is not None:
        sink.report(*found)


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
