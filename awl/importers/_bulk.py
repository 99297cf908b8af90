"""Many source sessions imported across worker processes, and the totals.

Each source session is imported on its own (:func:`import_source`), in a
pool of worker processes, largest first, so memory per worker is bounded
by one batch of the session at hand, and a store of thousands of sessions
uses every core.  A worker syncs and names each new log on a thread of
its own (:class:`_Syncing`) while it converts the next session: the disk
and the processor work at once, and each result is reported once its log
is durable.
"""

from __future__ import annotations

import os
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .._processes import progress_to, run_in_processes, stop_this_worker
from ..errors import STOPS_BULK_WRITES, stopped_text
from ..paths import path_text, session_root
from ._plan import ImportPlan
from ._run import ImportResult, SourceSpec, start_import


@dataclass(slots=True)
class ImportSummary:
    """Totals over an import run."""

    sessions: int = 0  # source sessions (not files that are none, nor missing paths)
    bytes: int = 0
    entries: int = 0
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    conflicts: int = 0
    busy: int = 0
    errors: int = 0
    refused: int = 0  # files found in a folder that are no session log (not errors)
    empty: int = 0
    blank: int = 0  # of the empty: files that hold nothing (no sign of any format)
    skipped: int = 0  # source lines skipped
    reasons: dict[str, int] = field(default_factory=dict)  # why, how many lines
    unrecognised: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    by_fallback_cwd: int = 0  # sessions filed under the run's fallback_cwd
    # Why the run stopped before its end (the session root: the disk full), and the
    # source files it did not import then, besides those it said failed (not begun,
    # or ended where a stop ends one; held for the run's end); None and 0 for a run
    # that went to its end.
    stopped: str | None = None
    not_imported: int = 0

    def add(self, r: ImportResult) -> None:
        """Count one source session's result (or a problem with a path)."""
        # A file that is no session log, or a path that names none, is no session.
        session = r.is_session and r.status != "refused"
        self.sessions += session
        self.bytes += r.bytes if session else 0  # the sessions' bytes, as the count says
        self.entries += r.entries
        if r.status == "imported":
            self.imported += 1
        elif r.status == "updated":
            self.updated += 1
        elif r.status == "unchanged":
            self.unchanged += 1
        elif r.status == "conflict":
            self.conflicts += 1
        elif r.status == "busy":
            self.busy += 1
        elif r.status == "empty":
            self.empty += 1
            self.blank += r.blank
        elif r.status == "refused" and not r.explicit:
            self.refused += 1
        else:
            self.errors += 1
        if r.unread and r.status in ("imported", "updated", "unchanged"):
            self.errors += 1  # imported in part: a file of it could not be read
        self.skipped += len(r.skipped)
        for _, _, why in r.skipped:
            kind = why.split(" (", 1)[0]
            self.reasons[kind] = self.reasons.get(kind, 0) + 1
        for name, n in r.unrecognised.items():
            self.unrecognised[name] = self.unrecognised.get(name, 0) + n
        self.duplicates += r.duplicates
        self.by_fallback_cwd += r.by_fallback_cwd

    @property
    def failed(self) -> bool:
        """Some session could not be imported (an error, a session busy in another
        process) or conflicts with its earlier import; or the folders walked held
        files but no session log (of the format asked), so nothing was found: a
        file that holds nothing beside them is no sign of one."""
        return (
            self.errors > 0
            or self.conflicts > 0
            or self.busy > 0
            or self.found_none
            or self.stopped is not None
        )

    @property
    def found_none(self) -> bool:
        """The paths held files, but no session log (of the format asked): only
        files that are none, and empty ones, which are no sign of one."""
        return self.sessions == self.blank and self.refused > 0

    def as_json(self) -> dict[str, Any]:
        """The totals as a JSON object."""
        return {
            "sessions": self.sessions,
            "bytes": self.bytes,
            "entries": self.entries,
            "imported": self.imported,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "conflicts": self.conflicts,
            "busy": self.busy,
            "errors": self.errors,
            "refused": self.refused,
            "empty": self.empty,
            "skipped": self.skipped,
            "reasons": self.reasons,
            "unrecognised": self.unrecognised,
            "duplicates": self.duplicates,
            "byFallbackCwd": self.by_fallback_cwd,
            "stopped": self.stopped,
            "notImported": self.not_imported,
        }


class _Syncing:
    """The imports of one process whose new logs are still being synced and named,
    each finished (:func:`start_import`'s second value) on one thread of their
    own, in order."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    def add(self, finish: Callable[[], None]) -> Future[None]:
        """Run ``finish`` on the thread; its future."""
        if self._pool is None or self._pid != os.getpid():
            # A forked worker inherits the object, not the thread.
            self._pool, self._pid, self._pending = ThreadPoolExecutor(1), os.getpid(), []
        future = self._pool.submit(finish)
        self._pending.append(future)
        return future

    def wait(self) -> None:
        """Return once every import added is finished."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()


_SYNCING = _Syncing()
"""A worker process's imports being finished (see :func:`_settle`)."""


_Task = tuple[SourceSpec, dict[str, Any]]
"""A source session to import, and the keywords :func:`start_import` takes for it."""


def _work(task: _Task) -> ImportResult:
    """Import one source session in a worker process; its result is final once
    :func:`_settle` has returned.  One that meets an error of :data:`STOPS_BULK_WRITES`
    stops the worker (each session after it would fail so, in a line of its own)
    before the parent, told by its result, stops the run."""
    r, finish = start_import(task[0], **task[1])
    if r.errno in STOPS_BULK_WRITES:
        stop_this_worker()

    def finished() -> None:
        finish()
        if r.errno in STOPS_BULK_WRITES:
            stop_this_worker()  # the session converted meanwhile ends before it writes

    _SYNCING.add(finished)
    return r


def _settle() -> None:
    """Finish the imports of this worker process's chunk, before its results go back."""
    _SYNCING.wait()


def _in_this_process(
    tasks: list[_Task],
    done: Callable[[ImportResult], None],
    stop_after: Callable[[ImportResult], bool] | None = None,
) -> None:
    """Import every task here, each result reported once its log is synced and named
    (while the next session is converted).  ``stop_after`` True of a result, asked
    once it is converted (a write failed: no session is begun after it) and again
    once it is reported (its log could not be synced), leaves the tasks after it
    undone."""
    syncing = _Syncing()
    unreported: deque[tuple[ImportResult, Future[None]]] = deque()
    reporting = False
    stopped = False

    def report_first() -> None:
        nonlocal reporting, stopped
        unreported[0][1].result()
        reporting = True
        r = unreported.popleft()[0]
        done(r)
        reporting = False
        stopped = stopped or (stop_after is not None and stop_after(r))

    try:
        for spec, options in tasks:
            if stopped:
                break
            r, finish = start_import(spec, **options)
            unreported.append((r, syncing.add(finish)))
            # Known already (a write failed): no session is begun after it.
            stopped = stopped or (stop_after is not None and stop_after(r))
            while len(unreported) > 1:
                report_first()
        while unreported:
            report_first()
    except BaseException:
        if not reporting:
            # Stopped (Ctrl-C): the sessions whose logs were being named are done,
            # and counted so (not when reporting itself failed: the output closed).
            syncing.wait()
            for r, future in unreported:
                if future.exception() is None:
                    done(r)
        raise
    finally:
        syncing.wait()


def _copies_apart(tasks: list[_Task]) -> tuple[list[_Task], list[_Task]]:
    """The tasks for the worker processes, and those to import after them: each
    source whose file name an earlier one has (a copy of one session, such as a
    backup of the store beside it; a compressed rollout and its ``.jsonl``),
    which then goes after its first, in the order one process takes them, so
    that which copy a run takes first does not depend on which worker was
    quicker."""
    first: list[_Task] = []
    later: list[_Task] = []
    names: set[str] = set()
    for task in tasks:
        name = os.path.basename(task[0].path).removesuffix(".zst")
        (later if name in names else first).append(task)
        names.add(name)
    return first, later


def import_sessions(
    sources: ImportPlan | Iterable[SourceSpec],
    *,
    jobs: int | None = None,
    dry_run: bool = False,
    session_dir: str | os.PathLike[str] | None = None,
    system_prompt: str | None = None,
    on_result: Callable[[ImportResult], None] | None = None,
    problems: Sequence[ImportResult] = (),
    fallback_cwd: str | os.PathLike[str] | None = None,
    on_stop: Callable[[], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[ImportResult], ImportSummary]:
    """Import every source session, largest first, across ``jobs`` worker processes
    (default: the cores); ``on_result`` sees each result as it comes.  ``sources``
    is a plan (:func:`plan_import`: its sources, its problems reported first),
    or source sessions alone, with ``problems`` (a plan's) reported first; ``fallback_cwd`` is as
    :func:`import_source` takes it; ``on_stop`` is called when a stop begins,
    before the sessions under way in worker processes end; ``on_progress``
    sees, as the import goes (within a large session too), the bytes of the
    sources taken so far, each source counting for the size it was planned at
    (see :func:`start_import`): the last value is their sum.
    Returns the results, sorted by source path, and the totals.

    An exception while importing (KeyboardInterrupt) ends the run once the
    sessions under way end (written whole, or not at all); none is started
    after it.  Importing again takes the rest.

    A session whose awl log could not be written for a reason every later one
    would meet too (the disk full, the quota used up, a file system mounted read
    only) stops the run so, without an exception: the summary says why
    (``stopped``) and how many source files were not imported (``not_imported``),
    and the run counts as failed."""
    if isinstance(sources, ImportPlan):
        # A plan's problems are part of the run: a path that named no session
        # counts (and fails the run) as the command says it.
        problems = [*sources.problems, *problems]
        sources = sources.sources
    results: list[ImportResult] = []
    summary = ImportSummary()
    held: list[ImportResult] = []
    # A dry run's records that its sources would write, by awl log: a copy of a
    # session later in the run is checked against them (see start_import).
    would: dict[str, dict[str, Any]] | None = {} if dry_run else None

    def report(r: ImportResult) -> None:
        taken = r.would_record if r.status in ("imported", "updated") else None
        if would is not None and taken is not None and r.path is not None:
            would.setdefault(r.path, taken)  # a worker's: its copies come later
        results.append(r)
        summary.add(r)
        if on_result is not None:
            on_result(r)

    def done(r: ImportResult) -> None:
        if r.status == "busy":
            # Most often another file of this run that is the same session (a
            # backup copy beside the store): taken again once the rest is done.
            held.append(r)
            return
        report(r)

    for r in problems:
        r.dry_run = dry_run  # a path that gave no session is part of the run as asked
        done(r)
    ordered = sorted(sources, key=lambda s: s.size, reverse=True)
    where = os.fspath(session_dir) if session_dir is not None else None
    cwd = os.fspath(fallback_cwd) if fallback_cwd is not None else None
    run = uuid.uuid4().hex  # what each worker's listing of the root is for
    options = {
        "session_dir": where,
        "dry_run": dry_run,
        "system_prompt": system_prompt,
        "fallback_cwd": cwd,
        "run": run,
        "dry_records": would,
    }
    tasks = [(s, options) for s in ordered]
    workers = max(1, jobs if jobs is not None else (os.cpu_count() or 1))
    later: list[_Task] = []
    stop: list[int] = []  # the error number that stopped the run

    def stop_after(r: ImportResult) -> bool:
        if not stop and r.errno in STOPS_BULK_WRITES:
            stop.append(r.errno)
        return bool(stop)

    try:
        if workers == 1 or len(tasks) <= 1:
            with progress_to(on_progress):
                _in_this_process(tasks, done, stop_after)
        else:
            tasks, later = _copies_apart(tasks)
            workers = min(workers, len(tasks))
            # Small sessions go in small batches: a message per session costs more
            # than a small session's import.
            chunk = max(1, min(16, len(tasks) // (workers * 8)))
            run_in_processes(
                _work,
                # Not a dry run's records: a worker's would depend on which was quicker.
                [(s, {**o, "hold_guessed": True, "dry_records": None}) for s, o in tasks],
                done,
                workers=workers,
                chunksize=chunk,
                settle=_settle,
                on_stop=on_stop,
                on_progress=on_progress,
                stop_after=stop_after,
            )
        if later and not stop:
            # After the workers, in this process and in order (see _copies_apart);
            # counted on from what the workers counted.
            base = sum(s.size for s, _ in tasks)
            step = (lambda n: on_progress(base + n)) if on_progress is not None else None
            with progress_to(step):
                _in_this_process(later, done, stop_after)
    except BaseException:
        for r in held:  # stopped: said as they are
            report(r)
        raise
    if stop:
        # Not the sessions held for the end of the run (a copy another worker was
        # importing, a start to take from it): the run ended first; counted below.
        held.clear()
        taken = {r.source for r in results}
        summary.not_imported = sum(1 for s in ordered if s.path not in taken)
        root = session_dir if session_dir is not None else session_root()
        summary.stopped = stopped_text(path_text(root), stop[0])
    if held:
        # One at a time, in the order of their paths, now that no worker of this
        # run holds their logs: what is still busy is held by another process.
        by_path = {s.path: s for s in ordered}
        again = [(by_path[r.source], options) for r in sorted(held, key=lambda r: r.source)]
        held.clear()
        # Not counted again: each was counted once, as the size it was planned at.
        _in_this_process(again, report)
    results.sort(key=lambda r: r.source)
    return results, summary
