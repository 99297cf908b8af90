"""Bulk reindexing: repair torn tails, checkpoint, rebuild index caches, verify.

Each log is handled on its own (in a pool of worker processes for
``--jobs``), so memory per worker is bounded by the index of the log at hand.
A log that another awl process holds is skipped and reported, never waited
on and never written; a log corrupt anywhere but its tail is reported and
left byte-identical.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SessionBusy, SessionError
from .index import load_cache, wants_cache
from .logmap import LogMap
from .manager import SessionManager, open_log
from .paths import log_files, project_dir, session_root
from .verify import verify_log


@dataclass(slots=True)
class FileResult:
    """What reindexing did (or, with ``dry_run``, would do) to one log."""

    path: str
    size: int = 0
    entries: int = 0
    repaired: int = 0  # bytes of a torn tail moved to .corrupt
    checkpointed: bool = False
    cache_written: bool = False
    busy: bool = False
    problems: list[tuple[int | None, str]] = field(default_factory=list)
    problem_count: int = 0
    error: str | None = None

    @property
    def failed(self) -> bool:
        """The log has an error (corruption, unreadable)."""
        return self.error is not None or self.problem_count > 0


@dataclass(slots=True)
class Summary:
    """Totals over a reindex run."""

    files: int = 0
    bytes: int = 0
    entries: int = 0
    repaired: int = 0
    checkpointed: int = 0
    caches: int = 0
    busy: int = 0
    errors: int = 0

    def add(self, r: FileResult) -> None:
        """Count one file's result."""
        self.files += 1
        self.bytes += r.size
        self.entries += r.entries
        self.repaired += 1 if r.repaired else 0
        self.checkpointed += 1 if r.checkpointed else 0
        self.caches += 1 if r.cache_written else 0
        self.busy += 1 if r.busy else 0
        self.errors += 1 if r.failed else 0


def session_paths(
    cwd: str | os.PathLike[str] | None = None,
    *,
    all_projects: bool = False,
    session_dir: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """The logs of ``cwd``'s project folder, or with ``all_projects`` every log under the root."""
    root = Path(session_dir) if session_dir is not None else session_root()
    if all_projects:
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [p for folder in folders for p in log_files(folder)]
    return log_files(project_dir(cwd or os.getcwd(), root))


def _is_busy(path: str) -> bool:
    # Probe the writers' lock without waiting; released at once.
    fd = open_log(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def reindex_file(
    path: str | os.PathLike[str], *, verify: bool = False, dry_run: bool = False
) -> FileResult:
    """Reindex one log; never raises for a problem with the log itself."""
    p = os.fspath(Path(path))  # as reported: "./x" as "x", "a//b" as "a/b"
    result = FileResult(p)
    try:
        result.size = os.stat(p).st_size
        # Verifying and a dry run read without the lock: look first, so that
        # a log in use is skipped (a writer's open below finds out itself).
        if (verify or dry_run) and _is_busy(p):
            result.busy = True
            return result
        if verify:
            report = verify_log(p)
            result.problems = report.problems
            result.problem_count = report.problem_count
            result.entries = report.entries
            if not report.ok:
                return result  # corrupt: report it, touch nothing
        if dry_run:
            _dry_run(p, result)
        else:
            # A writer's open takes the lock without waiting (SessionBusy),
            # repairs a torn tail and checkpoints; close writes the cache.
            with SessionManager.open(p) as m:
                result.repaired = m.stats.trimmed
                m.build_index()
                result.entries = m.entry_count
            # Read after close: closing may write the checkpoint and the cache.
            result.cache_written = m.stats.cache_saved
            result.checkpointed = m.stats.checkpoints_written > 0
            result.size = m.size
    except SessionBusy:
        result.busy = True
    except SessionError as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"{p}: {exc.strerror or exc}"
    return result


def _dry_run(p: str, result: FileResult) -> None:
    with SessionManager.open(p, read_only=True) as m:
        result.repaired = m.stats.trimmed
        result.checkpointed = m.needs_checkpoint()
        result.entries = m.entry_count
        fd = open_log(p)
        try:
            log = LogMap.for_reader(fd, m.size)
            try:
                cached = load_cache(log, os.fstat(fd), m.size, Path(p))
                stale = cached is None or cached.size < m.size
                result.cache_written = wants_cache(m.size) and stale
                del cached
            finally:
                log.close()
        finally:
            os.close(fd)


def _work(args: tuple[str, bool, bool]) -> FileResult:
    path, verify, dry_run = args
    return reindex_file(path, verify=verify, dry_run=dry_run)


def reindex(
    paths: Sequence[str | os.PathLike[str]],
    *,
    verify: bool = False,
    dry_run: bool = False,
    jobs: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
) -> tuple[list[FileResult], Summary]:
    """Reindex many logs, largest first, across ``jobs`` processes (default: the cores)."""
    ordered = sorted({os.fspath(p) for p in paths}, key=_size_or_zero, reverse=True)
    workers = max(1, jobs if jobs is not None else (os.cpu_count() or 1))
    results: list[FileResult] = []
    summary = Summary()

    def done(r: FileResult) -> None:
        results.append(r)
        summary.add(r)
        if on_result is not None:
            on_result(r)

    if workers == 1 or len(ordered) <= 1:
        for path in ordered:
            done(reindex_file(path, verify=verify, dry_run=dry_run))
    else:
        workers = min(workers, len(ordered))
        # Logs go to the workers in small batches: one message per log costs
        # more than a small log's whole reindex.
        chunk = max(1, min(32, len(ordered) // (workers * 8)))
        tasks = [(path, verify, dry_run) for path in ordered]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for r in pool.map(_work, tasks, chunksize=chunk):
                done(r)
    results.sort(key=lambda r: r.path)
    return results, summary


def _size_or_zero(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def describe(r: FileResult, *, dry_run: bool = False) -> Iterable[str]:
    """The lines a person reads about one log (nothing for a log with nothing to say)."""
    if r.busy:
        yield f"{r.path}: skipped: open in another awl process"
    if r.error:
        yield r.error
    for line, problem in r.problems:
        yield f"{r.path}:{line}: {problem}" if line is not None else f"{r.path}: {problem}"
    if r.problem_count > len(r.problems):
        yield f"{r.path}: … and {r.problem_count - len(r.problems)} more problems"
    verb = "would " if dry_run else ""
    if r.repaired:
        yield f"{r.path}: {verb}move a torn last line ({r.repaired} bytes) to .corrupt"
    if r.checkpointed:
        yield f"{r.path}: {verb}add a checkpoint"


def format_bytes(n: int) -> str:
    """A byte count for people."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"
