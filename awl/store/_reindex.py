"""Bulk reindexing: repair torn tails, checkpoint, rebuild index caches, verify.

Each log is handled on its own (in a pool of worker processes for
``--jobs``), so memory per worker is bounded by the index of the log at hand.
A log that another awl process holds is skipped and reported, never waited
on and never written; a log corrupt anywhere but its tail is reported and
left byte-identical.

Before that, what a process that died while creating a session left behind
(a hidden ``.<log>.<pid>.<host>.creating`` file, see :func:`settle_creation`) is
renamed into place as the log it was to become, or removed when it holds
nothing, so that the session's first messages are not lost.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._processes import run_in_processes, stop_this_worker
from ..errors import STOPS_BULK_WRITES, CorruptSession, SessionBusy, SessionError, stopped_text
from ..paths import (
    corrupt_path,
    creating_pid,
    creations,
    index_cache_path,
    log_files,
    missing_text,
    path_list,
    path_text,
    project_dir,
    project_folders,
    session_file_name,
    session_root,
)
from ._fs import Env, default_env, first_names, keep_bytes, open_regular
from ._index_cache import load_cache, stale_caches, wants_cache
from ._logfile import MAX_HEADER, keep_problem, read_header, read_header_fd, symlink_refusal
from ._logmap import LogMap
from ._session import SessionManager
from ._verify import verify_log


@dataclass(slots=True)
class FileResult:
    """What reindexing did (or, with ``dry_run``, would do) to one log."""

    path: str
    size: int = 0
    entries: int = 0
    repaired: int = 0  # bytes of a torn tail moved to .corrupt
    checkpointed: bool = False
    cache_written: bool = False
    # Why the index cache could not be written (the disk full), else None.
    cache_error: str | None = None
    busy: bool = False
    problems: list[tuple[int | None, str]] = field(default_factory=list)
    problem_count: int = 0
    error: str | None = None
    # An unfinished creation (see settle_creation): the hidden file this log
    # was recovered from, or, for the hidden file itself, why it was removed.
    recovered_from: str | None = None
    removed: str | None = None
    # A stale index cache file (path is the cache's): why it was removed.
    pruned: str | None = None
    # A folder, not a log: one that cannot be listed or holds no logs (error).
    folder: bool = False
    # The system's error number of the error, when it gave one (EROFS: the log's
    # file system is read only): a run stops at some (see reindex).
    errno: int | None = None

    @property
    def failed(self) -> bool:
        """The log has an error (corruption, unreadable)."""
        return self.error is not None or self.problem_count > 0

    def as_json(self) -> dict[str, object]:
        """The result as a JSON object (``awl reindex --json``)."""
        return {
            "path": self.path,
            "folder": self.folder,
            "size": self.size,
            "entries": self.entries,
            "repaired": self.repaired,
            "checkpointed": self.checkpointed,
            "cacheWritten": self.cache_written,
            "cacheError": self.cache_error,
            "busy": self.busy,
            "error": self.error,
            "problems": [{"line": line, "problem": text} for line, text in self.problems],
            "problemCount": self.problem_count,
            "recoveredFrom": self.recovered_from,
            "removed": self.removed,
            "pruned": self.pruned,
        }


@dataclass(slots=True)
class ReindexSummary:
    """Totals over a reindex run."""

    files: int = 0
    bytes: int = 0
    entries: int = 0
    repaired: int = 0
    checkpointed: int = 0
    caches: int = 0
    caches_failed: int = 0  # index caches that could not be written (the disk full)
    busy: int = 0
    errors: int = 0
    recovered: int = 0
    leftovers: int = 0  # hidden files of dead creations removed
    pruned: int = 0  # stale index cache files removed
    # Why the run stopped before its end (a log's folder: the disk full), and the
    # logs it did not reindex then, besides the ones it said failed; None and 0
    # for a run that went to its end.
    stopped: str | None = None
    not_reindexed: int = 0

    def add(self, r: FileResult) -> None:
        """Count one file's result."""
        if r.removed is not None:
            self.leftovers += 1
            return
        if r.folder:
            self.errors += 1  # a folder's error, not a file reindexed
            return
        if r.pruned is not None:
            self.pruned += 0 if r.error else 1
            self.errors += 1 if r.error else 0
            return
        self.recovered += 1 if r.recovered_from else 0
        self.files += 1
        self.bytes += r.size
        self.entries += r.entries
        self.repaired += 1 if r.repaired else 0
        self.checkpointed += 1 if r.checkpointed else 0
        self.caches += 1 if r.cache_written else 0
        self.caches_failed += 1 if r.cache_error else 0
        self.busy += 1 if r.busy else 0
        self.errors += 1 if r.failed else 0

    def as_json(self) -> dict[str, int | str | None]:
        """The totals as a JSON object (``awl reindex --json``'s ``summary``), its
        names in camelCase as the files' are."""
        return {
            re.sub(r"_([a-z])", lambda m: m[1].upper(), name): getattr(self, name)
            for name in self.__slots__
        }


@dataclass(slots=True)
class ReindexPlan:
    """What a reindex run covers: the logs, unfinished creations to settle, and
    folders that could not be listed (reported as errors)."""

    targets: list[Path]
    creations: list[tuple[Path, Path]]
    unlisted: list[FileResult]


def plan_reindex(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] = (),
    *,
    cwd: str | os.PathLike[str] | None = None,
    all_projects: bool = False,
    session_dir: str | os.PathLike[str] | None = None,
) -> ReindexPlan:
    """The logs ``paths`` name (:func:`expand_paths`), else ``cwd``'s project's, or
    with ``all_projects`` every project's, with the unfinished creations of their
    folders (none when ``paths`` are given: only those files are touched).

    Raises ValueError for an empty path, SessionError when the root cannot be listed.
    """
    unlisted: list[FileResult] = []
    paths = path_list(paths)  # a lone str is one path, not its characters
    if paths:
        targets = expand_paths(paths, unlisted=unlisted)
        creations: list[tuple[Path, Path]] = []
    else:
        targets = session_paths(
            cwd, all_projects=all_projects, session_dir=session_dir, unlisted=unlisted
        )
        creations = unfinished_creations(cwd, all_projects=all_projects, session_dir=session_dir)
    return ReindexPlan(targets, creations, unlisted)


def _folders(
    cwd: str | os.PathLike[str] | None,
    all_projects: bool,
    session_dir: str | os.PathLike[str] | None,
) -> list[Path]:
    root = Path(session_dir) if session_dir is not None else session_root()
    if all_projects:
        return project_folders(root)
    return [project_dir(cwd or os.getcwd(), root)]


def session_paths(
    cwd: str | os.PathLike[str] | None = None,
    *,
    all_projects: bool = False,
    session_dir: str | os.PathLike[str] | None = None,
    unlisted: list[FileResult] | None = None,
) -> list[Path]:
    """The logs of ``cwd``'s project folder, or with ``all_projects`` every log under the root.

    A folder that cannot be listed raises SessionError, or, given
    ``unlisted``, is added there as a result with its error and skipped.
    """
    out: list[Path] = []
    for f in _folders(cwd, all_projects, session_dir):
        out.extend(_listed(log_files, f, unlisted))
    return out


def expand_paths(
    paths: Iterable[str | os.PathLike[str]], *, unlisted: list[FileResult] | None = None
) -> list[Path]:
    """The logs that command-line PATHS name: a file as it is, a folder as its logs.

    The session root, and any folder with no logs of its own (a copy of a
    store, laid out like the root), stands for the logs of its folders.  A
    folder that cannot be listed, or in which there are no logs at all,
    raises SessionError, or, given ``unlisted``, is added there as a result
    with its error.  An empty path is a ValueError: it would mean the
    current folder without saying so.
    """
    out: list[Path] = []
    folders: set[tuple[int, int]] = set()
    for raw in paths:
        if not os.fspath(raw):
            raise ValueError("an empty path")
        p = Path(raw)
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            st = None  # reindexing it says what is wrong (missing, too long...)
        if st is None or not stat.S_ISDIR(st.st_mode):
            out.append(p)
            continue
        if (st.st_dev, st.st_ino) in folders:
            continue  # its logs are in already (their names are made unique later)
        folders.add((st.st_dev, st.st_ino))
        errors: list[FileResult] = []
        root = _same_file(p, session_root())
        logs = [] if root else _listed(log_files, p, errors)
        if not logs and not errors:
            for f in _listed(project_folders, p, errors):
                logs.extend(_listed(log_files, f, errors))
        if not logs and not errors and not root:  # an empty store is not an error
            none = f"{p}: no session logs in it, nor in its folders"
            errors.append(FileResult(str(p), error=none, folder=True))
        if errors and unlisted is None:
            raise SessionError(str(errors[0].error))
        out.extend(logs)
        if unlisted is not None:
            unlisted.extend(errors)
    return out


def _listed(
    listing: Callable[[Path], list[Path]], folder: Path, unlisted: list[FileResult] | None
) -> list[Path]:
    """``listing(folder)``, or nothing with its error added to ``unlisted`` (or raised)."""
    try:
        return listing(folder)
    except SessionError as exc:
        if unlisted is None:
            raise
        unlisted.append(FileResult(str(folder), error=str(exc), folder=True))
        return []


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def unfinished_creations(
    cwd: str | os.PathLike[str] | None = None,
    *,
    all_projects: bool = False,
    session_dir: str | os.PathLike[str] | None = None,
) -> list[tuple[Path, Path]]:
    """``(hidden file, log)`` of each session creation in :func:`session_paths`' folders
    (those that can be listed: :func:`session_paths` reports the others)."""
    out: list[tuple[Path, Path]] = []
    for f in _folders(cwd, all_projects, session_dir):
        with contextlib.suppress(SessionError):
            out.extend(creations(f))
    return out


CREATION_GRACE = 60.0
"""Seconds a creation file is left alone after it was last written, while the
process its name gives may be alive.

A live creator locks its file microseconds after making it and holds the
lock until done; a file this old that nobody locks was left by a process
that died.  Young files are not even probed, so a probe can never make a
creation that is just starting fail to take its lock: but for one whose
creator is no process of this host any more (an import killed and run again
at once), which can take no lock at all."""


def _creator_gone(tmp: str) -> bool:
    """Whether the process a creation file's name gives is certainly not running:
    a pid of this host and pid namespace (the name says which) that no process
    has.  Any doubt counts as alive: a name of another host's or container's,
    or of an earlier awl (no host in it), a pid reused since, another user's
    process, this process itself."""
    pid = creating_pid(os.path.basename(tmp))
    if pid is None or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)  # signal 0: only whether it exists
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):
        return False
    # A zombie has exited (its lock is gone) but is not yet reaped: what a killed
    # process stays for a while under an init that reaps late (a container's).
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_line = f.read()
    except OSError:
        return False
    state = stat_line.rpartition(b")")[2][1:2]  # after the command name, which may hold ")"
    return state in (b"Z", b"X")


def settle_creation(
    tmp: str | os.PathLike[str], log: str | os.PathLike[str], *, dry_run: bool = False
) -> FileResult | None:
    """Finish or clear a session creation whose process died (see ``SessionManager``).

    A new log is written under a hidden name, locked, synced, then renamed
    into place (``renameat2``, or link and unlink where that is missing).
    What a dead creator left is settled so that nothing is lost:

    - the log exists and is the same file (it died between link and unlink):
      the hidden name is removed;
    - the log does not exist and the file has a complete header for it (it
      died before the rename): it is renamed into place, to be reindexed like
      any log (a torn last line is repaired then); its first messages are
      kept;
    - the log exists, another file, and this one has a complete header for
      it (another process made the same log since: an import of the same
      source): the file becomes ``<log>.corrupt`` (appended to it);
    - the file is empty: it is removed (nothing was written);
    - not even its header line is whole (it died in its first write): the
      file becomes ``<log>.corrupt``, where a torn line's bytes go;
    - anything else is reported and left as it is.

    Returns None when there is nothing to do: the file is gone, in use
    (a session being created now), or written to less than a minute ago by
    a process that may still be running (:data:`CREATION_GRACE`).
    """
    t, lg = os.fspath(tmp), os.fspath(log)
    env = default_env()
    try:
        if time.time() - os.lstat(t).st_mtime < CREATION_GRACE and not _creator_gone(t):
            return None
        # O_NONBLOCK: a FIFO under that name must not hang the run.
        fd = env.open(t, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return FileResult(t, error=f"{t}: cannot open: {exc.strerror}")
    try:
        try:
            env.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its creator is alive
        st = env.fstat(fd)
        left = "unfinished session creation left as it is"
        try:
            now = os.lstat(t)
        except FileNotFoundError:
            return None
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None  # settled by another run while this one waited
        if not stat.S_ISREG(st.st_mode):
            return FileResult(t, error=f"{t}: not a regular file; {left}")
        try:
            other: os.stat_result | None = os.lstat(lg)
        except FileNotFoundError:
            other = None
        if other is not None:
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return _remove(env, t, f"a second name of {lg}", dry_run)
            if _header_names(env, fd, t, lg):
                # The same session, created since by another process (an import
                # makes the same log of the same source again): this attempt's
                # bytes are kept where a torn line's go, the log left as it is.
                target = os.fspath(corrupt_path(lg))
                if not dry_run:
                    _keep_in(env, fd, t, target)
                return FileResult(
                    t,
                    removed=f"a creation of {lg}, which another process made since; "
                    f"kept in {target}",
                )
            return FileResult(t, st.st_size, error=f"{t}: {lg} exists and is another file; {left}")
        if st.st_size == 0:
            return _remove(env, t, "empty: its process died before writing", dry_run)
        try:
            header = read_header_fd(fd, Path(t), env)
        except CorruptSession as exc:
            if b"\n" in env.pread(fd, MAX_HEADER + 1, 0):
                return FileResult(t, st.st_size, error=f"{exc}; {left}")
            # Not even the header line is whole: it died in its first write.
            # Kept where a torn line's bytes go, under the log's name.
            target = os.fspath(corrupt_path(lg))
            if not dry_run:
                _keep_in(env, fd, t, target)
            return FileResult(t, removed=f"an unfinished first write, kept in {target}")
        if session_file_name(header.timestamp, header.id) != os.path.basename(lg):
            names = f"session {header.id} created {header.timestamp}"
            return FileResult(
                t,
                st.st_size,
                error=f"{t}: its header is for {names}, not {os.path.basename(lg)}; {left}",
            )
        if not dry_run:
            env.rename_noreplace(t, lg)  # never replaces a file
            _sync_dir(env, os.path.dirname(lg) or ".")
        return FileResult(lg, st.st_size, recovered_from=t)
    except OSError as exc:
        return FileResult(t, error=f"{t}: cannot settle: {exc.strerror}; {left}")
    finally:
        env.close(fd)


def _header_names(env: Env, fd: int, t: str, lg: str) -> bool:
    """Whether the file ``t`` (open as ``fd``) has a whole header for the log ``lg``."""
    try:
        header = read_header_fd(fd, Path(t), env)
    except CorruptSession:
        return False
    return session_file_name(header.timestamp, header.id) == os.path.basename(lg)


def _keep_in(env: Env, fd: int, t: str, target: str) -> None:
    """Move the file ``t`` (open as ``fd``) to ``target``, or append it there."""
    try:
        env.rename_noreplace(t, target)
    except FileExistsError:
        st, there = env.fstat(fd), os.lstat(target)
        if (there.st_dev, there.st_ino) != (st.st_dev, st.st_ino):
            # A .corrupt file of an earlier log by that name: add to it, as a
            # writer's repair does.  Removing t comes after the sync.
            keep_bytes(env, Path(target), fd, 0, st.st_size)
        # else: the second name a run that died between link and unlink left.
        env.unlink(t)
    _sync_dir(env, os.path.dirname(target) or ".")


def _remove(env: Env, path: str, why: str, dry_run: bool) -> FileResult:
    if not dry_run:
        env.unlink(path)
        _sync_dir(env, os.path.dirname(path) or ".")
    return FileResult(path, removed=why)


def _sync_dir(env: Env, folder: str) -> None:
    # Done already; a folder that cannot be synced is no reason to report failure.
    with contextlib.suppress(OSError):
        env.sync_dir(folder)


def _is_busy(path: str) -> bool:
    # Probe the writers' lock without waiting; released at once.
    env = default_env()
    fd = open_regular(env, path)
    try:
        try:
            env.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        env.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        env.close(fd)


def reindex_file(
    path: str | os.PathLike[str], *, verify: bool = False, dry_run: bool = False
) -> FileResult:
    """Reindex one log; never raises for a problem with the log itself."""
    p = os.fspath(Path(path))  # as reported: "./x" as "x", "a//b" as "a/b"
    result = FileResult(p)
    try:
        result.size = _log_bytes(os.stat(p))
        # Verifying and a dry run read without the lock: look first, so that
        # a log in use is skipped (a writer's open below finds out itself).
        if (verify or dry_run) and _is_busy(p):
            result.busy = True
            return result
        if verify:
            report = verify_log(p)
            result.problems = report.problems
            result.problem_count = report.problem_count
            if not report.ok:
                # Corrupt: reported, touched nothing, and counts no entries, as
                # a reindex without --verify that the open refuses counts none.
                return result
            result.entries = report.entries
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
            result.cache_error = m.stats.cache_error
            result.checkpointed = m.stats.checkpoints_written > 0
            result.size = m.size
    except SessionBusy:
        result.busy = True
    except SessionError as exc:
        result.error, result.errno = str(exc), exc.errno
    except OSError as exc:
        result.error, result.errno = missing_text(p, exc), exc.errno
    return result


def _dry_run(p: str, result: FileResult) -> None:
    # A reader's open takes what a writer's refuses: ask first what the real
    # run's would say, so that a dry run predicts its errors too.
    refused = _writer_open_error(p)
    if refused is not None:
        result.error = refused
        return
    with SessionManager.open(p, read_only=True) as m:
        if m.stats.trimmed:
            refused = keep_problem(corrupt_path(m.path), os.stat(m.path))
            if refused is not None:
                result.error = refused
                return
        result.repaired = m.stats.trimmed
        result.checkpointed = m.needs_checkpoint()
        result.entries = m.entry_count
        fd = open_regular(default_env(), p)
        try:
            log = LogMap.for_reader(fd, m.size, p)
            try:
                cached = load_cache(log, os.fstat(fd), m.size, Path(p))
                stale = cached is None or cached.size < m.size
                result.cache_written = wants_cache(m.size) and stale
                del cached
            finally:
                log.close()
        finally:
            os.close(fd)


def _writer_open_error(p: str) -> str | None:
    """``SessionManager.open``'s refusal of a log that is a symbolic link, which
    a reader's open follows; None otherwise.  Found by opening it with the
    writer's flags and closing it at once: nothing is written."""
    path = Path(os.path.abspath(p))
    try:
        os.close(open_regular(default_env(), path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW))
    except (OSError, SessionError) as exc:
        if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
            return symlink_refusal(path)
    # Anything else is left to the reader's open (a log one may read but not
    # write still passes a dry run: tests/test_permissions.py expects that).
    return None


def _work(args: tuple[str, bool, bool]) -> FileResult:
    path, verify, dry_run = args
    r = reindex_file(path, verify=verify, dry_run=dry_run)
    if r.errno in STOPS_BULK_WRITES and not verify:
        stop_this_worker()  # each log after it would fail so (see reindex)
    return r


def reindex(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    verify: bool = False,
    dry_run: bool = False,
    jobs: int | None = None,
    on_result: Callable[[FileResult], None] | None = None,
    creations: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]] = (),
    prune: bool = False,
    failed: Sequence[FileResult] = (),
    sizes: Mapping[str, int] | None = None,
) -> tuple[list[FileResult], ReindexSummary]:
    """Reindex many logs, largest first, across ``jobs`` processes (default: the cores).

    ``creations`` (from :func:`unfinished_creations`) are settled first; a
    log recovered from one is reindexed with the rest.  With ``prune``, stale
    index cache files (:func:`prune_caches`) are removed last, once the logs'
    own caches are up to date.  ``failed`` (folders :func:`session_paths`
    could not list) are reported first, as errors.  ``sizes`` is
    :func:`one_name_each` of ``paths`` when the caller has it already (a
    progress bar needs it first): a store is not stat'ed twice.

    A log that cannot be written for a reason each later one would meet too
    (the disk full, a file system mounted read only) stops the run, as a
    Ctrl-C does but without an exception: the summary says why (``stopped``)
    and how many logs were not reindexed (``not_reindexed``); no cache is
    pruned then.
    """
    paths = path_list(paths)  # a lone str is one path, not its characters
    sizes = dict(sizes) if sizes is not None else one_name_each(paths)
    results: list[FileResult] = []
    summary = ReindexSummary()
    recovered: dict[str, str] = {}

    shared: dict[str, str] = {}  # found once the creations are settled

    def done(r: FileResult) -> None:
        if r.path in recovered:
            r.recovered_from = recovered[r.path]
        if r.path in shared and not r.busy:
            r.problems.append((None, shared[r.path]))
            r.problem_count += 1
        results.append(r)
        summary.add(r)
        if on_result is not None:
            on_result(r)

    for r in failed:
        done(r)
    for tmp, log in creations:
        settled = settle_creation(tmp, log, dry_run=dry_run)
        if settled is None:
            continue
        if settled.recovered_from is not None and not dry_run:
            recovered[settled.path] = settled.recovered_from
            sizes[settled.path] = size_or_zero(settled.path)
        elif settled.recovered_from is not None:
            # Say what reindexing the recovered log would do: it is the same
            # file, still under its hidden name.
            r = reindex_file(settled.recovered_from, verify=verify, dry_run=True)
            r.path, r.recovered_from = settled.path, settled.recovered_from
            done(r)
        else:
            done(settled)
    if verify:
        shared.update(_shared_ids(sizes))
    ordered = sorted(sizes, key=sizes.__getitem__, reverse=True)
    workers = max(1, jobs if jobs is not None else (os.cpu_count() or 1))

    stop: list[tuple[str, int]] = []  # the folder and the error that stopped the run

    def stop_after(r: FileResult) -> bool:
        # Not a verification, which is there to look at every log (a read-only copy
        # of a store: each log's write then fails in a line of its own).
        if not stop and not verify and r.errno in STOPS_BULK_WRITES:
            stop.append((os.path.dirname(os.path.abspath(r.path)), r.errno))
        return bool(stop)

    # The logs recovered from dead creations first, whatever stops the run: their
    # recovery is said with them, and the hidden files it came from are gone.
    for path in [p for p in ordered if p in recovered]:
        r = reindex_file(path, verify=verify, dry_run=dry_run)
        done(r)
        stop_after(r)
    ordered = [p for p in ordered if p not in recovered] if not stop else []
    if workers == 1 or len(ordered) <= 1:
        for path in ordered:
            r = reindex_file(path, verify=verify, dry_run=dry_run)
            done(r)
            if stop_after(r):
                break
    else:
        workers = min(workers, len(ordered))
        # Logs go to the workers in small batches: one message per log costs
        # more than a small log's whole reindex.
        chunk = max(1, min(32, len(ordered) // (workers * 8)))
        tasks: list[tuple[str, bool, bool]] = [(path, verify, dry_run) for path in ordered]
        run_in_processes(
            _work, tasks, done, workers=workers, chunksize=chunk, stop_after=stop_after
        )
    if stop:
        taken = {r.path for r in results}  # as reindex_file names them
        summary.not_reindexed = sum(
            1 for p in sizes if p not in recovered and os.fspath(Path(p)) not in taken
        )
        summary.stopped = stopped_text(path_text(stop[0][0]), stop[0][1])
        prune = False  # (the caches of the logs not reindexed are not stale)
    if prune:
        # A dry run has not rewritten the caches it says it would write: an
        # old cache there is not stale, it is about to be replaced.
        rewritten = {index_cache_path(r.path) for r in results if dry_run and r.cache_written}
        for r in prune_caches(dry_run=dry_run, keep=rewritten):
            done(r)
    results.sort(key=lambda r: r.path)
    return results, summary


def _shared_ids(paths: Iterable[str]) -> dict[str, str]:
    """The problem of each log in the session root whose session id another of
    ``paths`` there carries too (a copy made beside it): resuming or showing
    by that id then refuses.  Logs elsewhere (a backup, a corpus) are found
    by no id, and are not looked at."""
    root = os.path.abspath(session_root())
    by_id: dict[str, list[str]] = {}
    for p in paths:
        # The path as lookups see it: a project folder may be a link.
        if os.path.dirname(os.path.dirname(os.path.abspath(p))) != root:
            continue
        try:
            by_id.setdefault(read_header(p).id, []).append(p)
        except SessionError:
            continue  # the log's own check says what is wrong with it
    problems: dict[str, str] = {}
    for sid, logs in by_id.items():
        for p in logs if len(logs) > 1 else ():
            others = [o for o in sorted(logs) if o != p]
            named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if others[3:] else "")
            problems[p] = (
                f"session {sid} is also in {named}: awl --resume and awl show by its id "
                "refuse where they find more than one (name one by its path, or move the "
                "copies away)"
            )
    return problems


def one_name_each(paths: Iterable[str | os.PathLike[str]]) -> dict[str, int]:
    """Each file of ``paths`` once, under the first of its names in sorted order,
    with its size (0 when it is not a regular file or cannot be stat'ed:
    reindexing it says why).

    Two workers given one log under two names would fight over its lock, and
    the summary would count it twice.
    """
    return {p: _log_bytes(st) if st is not None else 0 for p, st in first_names(paths)}


def prune_caches(*, dry_run: bool = False, keep: Iterable[Path] = ()) -> list[FileResult]:
    """Remove the index cache files no log can use: their log is gone, is another
    file or is below the cache threshold, they were written by another cache
    version, they are cut short, or they are a temporary a dead writer left
    over an hour ago.

    A cache is only a cache: at worst a writer saving one at the same moment
    loses it, and the log is scanned again on its next open.
    """
    skip = set(keep)
    out = []
    for path, why in stale_caches():
        if path in skip:
            continue
        r = FileResult(os.fspath(path), pruned=why)
        if not dry_run:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                r.error = f"{path}: cannot remove a stale index cache: {exc.strerror or exc}"
        out.append(r)
    return out


def size_or_zero(path: str | os.PathLike[str]) -> int:
    """A file's size, or 0 when it is not a regular file or cannot be stat'ed
    (reported when it is reindexed)."""
    try:
        return _log_bytes(os.stat(path))
    except (OSError, ValueError):
        return 0


def _log_bytes(st: os.stat_result) -> int:
    # A folder or device named like a log is an error, not bytes reindexed.
    return st.st_size if stat.S_ISREG(st.st_mode) else 0
