"""Importing one source session into one awl session log.

The awl session's id is derived from the source's (:func:`session_id_for`),
so its path is known before anything is read from it.  A first import
writes the whole session; a later one reads the last import record, and
when every source file still starts with the bytes it took (same hash):
nothing more → ``unchanged``, no lock taken, nothing written; more lines →
the converter replays the part taken (rebuilding its state, writing
nothing), then the new lines' entries are appended under the parents the
records map (``updated``).  A source that no longer starts with what was
taken (rewritten, truncated) is a ``conflict``: reported, nothing written.

Entries are written in batches (a source's lines up to a point where a
batch may end, ``BATCH_BYTES`` or more), each one write beginning with its
import record and ending with a line naming it, so memory holds one batch.
A crash during a long write can leave a prefix of a batch: its record is
then read as never written (:func:`~._record.read_records`), and the next
import takes that part of the source again.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._processes import count_progress, stop_if_asked
from ..conversation import UNKNOWN, Usage
from ..errors import FormatError, SessionBusy, SessionError, SessionWriteError
from ..paths import (
    corrupt_path,
    creating_log,
    creations,
    path_text,
    project_dir,
    session_file_name,
    windows_path,
)
from ..store import (
    DiskMessage,
    DiskText,
    NewEntry,
    SessionManager,
    creation_problem,
    format_timestamp,
    held_by_writer,
    settle_creation,
    writing_problem,
)
from . import _claude, _codex, _pi
from ._build import (
    ROOT_KEY,
    Builder,
    Converter,
    Planned,
    SourceInfo,
    session_id_for,
)
from ._placement import NAMING, Filing, wait_named
from ._record import (
    END_TYPE,
    FORMAT_NAMES,
    RECORD_TYPE,
    Imported,
    cut_short,
    last_record,
    read_records,
)
from ._source import (
    BOM,
    FORMATS,
    JSON_SPACE,
    TORN_START,
    Hashing,
    after_torn,
    as_str,
    blank,
    detect,
    digest,
    hash_of,
    head,
    lines,
    new_hash,
    open_source,
    parse,
    read_on,
    split_glued,
)

BATCH_BYTES = 32 << 20
"""Source bytes after which a batch is written at the next point where one may end."""

BATCH_ENTRIES = 100_000
"""Entries planned after which a batch is written there too, whatever the bytes read:
pi's context edits plan entries again, which the source's bytes do not count."""

STATUSES = ("imported", "updated", "unchanged", "conflict", "busy", "error", "refused", "empty")
"""What :func:`import_source` can say of a source session (``ImportResult.status``)."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """A source session to import: its file, the files that belong to it (Claude
    Code subagent transcripts, relative to the file's folder; a folder of them
    that could not be listed, ending in a slash, to be said so), the format
    when the user named one, and whether the user named the file itself."""

    path: str
    format: str | None = None
    extras: tuple[str, ...] = ()
    explicit: bool = False
    size: int = 0
    # Links in the session's folder, relative as ``extras`` are: passed over, as
    # what they point at is no file of the session's, and said so.
    links: tuple[str, ...] = ()


@dataclass(slots=True)
class ImportResult:
    """What importing one source session did (or, in a dry run, would do)."""

    source: str
    format: str | None = None
    status: str = "error"
    session: str | None = None  # the awl session id
    path: str | None = None  # the awl log
    source_id: str | None = None
    entries: int = 0  # entries written (would be, in a dry run)
    lines: int = 0  # source lines read that an earlier import had not taken
    bytes: int = 0  # the source files' sizes
    skipped: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, why)
    unrecognised: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0  # source lines taken once (repeats of another line)
    notes: list[str] = field(default_factory=list)
    # Files of the session that could not be read or listed (said in a note too):
    # the awl session lacks them until an import can read them.
    unread: list[str] = field(default_factory=list)
    error: str | None = None
    explicit: bool = False
    dry_run: bool = False
    # Refused as not of the format asked: the format it looks like instead
    # ("awl" for an awl session log).
    looks_like: str | None = None
    # False for a problem with a path that holds no session to count (missing,
    # not listable, no store at all): said, but not a session of the summary.
    is_session: bool = True
    # Filed under the run's ``fallback_cwd`` (``--cwd``): its log records no
    # usable working directory and no earlier import had filed it.
    by_fallback_cwd: bool = False
    # Empty for holding nothing at all (no sign of any format), not for holding no
    # conversation yet.
    blank: bool = False
    # A dry run's that would write: what its last record would say of the source
    # (its "source" and "files"), for a copy of the session later in the run to
    # be checked against, as it would be against the log (not in as_json).
    would_record: dict[str, Any] | None = None
    # The system's error number of the failure, when it gave one (ENOSPC: the disk
    # where the awl log is written is full): a bulk run stops at some (see
    # import_sessions).
    errno: int | None = None

    @property
    def failed(self) -> bool:
        """An error, a conflict, or a file of the session not read: the awl session
        does not hold what the source does."""
        return (
            self.status in ("error", "conflict")
            or (self.status == "refused" and self.explicit)
            or bool(self.unread)
        )

    def as_json(self) -> dict[str, Any]:
        """The result as a JSON object (``awl import --json``)."""
        return {
            "source": path_text(self.source),
            "format": self.format,
            "session": self.session,
            "path": self.path,
            "status": self.status,
            "sourceId": self.source_id,
            "entries": self.entries,
            "lines": self.lines,
            "bytes": self.bytes,
            "skipped": [{"file": f, "line": n, "reason": why} for f, n, why in self.skipped],
            "unrecognised": self.unrecognised,
            "duplicates": self.duplicates,
            "notes": self.notes,
            "unread": self.unread,
            "error": self.error,
            "looksLike": self.looks_like,
            "dryRun": self.dry_run,
        }


_MODULES: dict[str, Any] = {"pi": _pi, "claude": _claude, "codex": _codex}
# The types of each format's lines: what a line's torn start is told from (after_torn).
_LINE_TYPES: dict[str, frozenset[str]] = {
    "pi": frozenset(_pi.KNOWN_TYPES),
    "claude": _claude.CHAIN | _claude.OTHER_TYPES,
    "codex": _codex.LINE_TYPES,
}
# Whether a line is of a kind the format writes: a file with none of them is no session
# of it.
_WRITES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "pi": lambda obj: as_str(obj.get("type")) in _LINE_TYPES["pi"],
    "claude": lambda obj: as_str(obj.get("type")) in _LINE_TYPES["claude"],
    "codex": _codex.writes,
}
_CONVERTERS: dict[str, type[Converter]] = {
    "pi": _pi.PiConverter,
    "claude": _claude.ClaudeConverter,
    "codex": _codex.CodexConverter,
}


def import_source(
    spec: SourceSpec,
    *,
    session_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    system_prompt: str | None = None,
    fallback_cwd: str | os.PathLike[str] | None = None,
    run: str | None = None,
) -> ImportResult:
    """Import one source session (see the module docstring); never raises for a
    problem with the source or the awl log, which the result reports.

    ``system_prompt`` (with ``{cwd}`` standing for the session's directory)
    starts a new awl session as a system message, as awl's own sessions
    start, the source's roots under it.  ``fallback_cwd`` (absolute) is the
    working directory of a session whose log records none and that no
    earlier import filed; without it, such a session is an error.  ``run``
    names a bulk run (:func:`import_sessions` gives one): within it, each
    process lists the session root once, not at each new session, to find a
    session already imported under another working directory.
    """
    r, finish = start_import(
        spec,
        session_dir=session_dir,
        dry_run=dry_run,
        system_prompt=system_prompt,
        fallback_cwd=fallback_cwd,
        run=run,
    )
    finish()
    return r


def start_import(
    spec: SourceSpec,
    *,
    session_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    system_prompt: str | None = None,
    fallback_cwd: str | os.PathLike[str] | None = None,
    run: str | None = None,
    hold_guessed: bool = False,
    dry_records: dict[str, dict[str, Any]] | None = None,
) -> tuple[ImportResult, Callable[[], None]]:
    """:func:`import_source`, but a new awl log is left to be synced and named by
    the function returned, which completes the result (an error if it cannot
    be: then nothing of the log is left).  Until it runs, the result is not
    final and the log exists under a hidden name only.  A bulk import calls
    it on a thread of its own while it converts the next session, so that
    the disk's time and the processor's overlap.

    The source counts for its planned size (``spec.size``) in the run's
    progress (:func:`awl._processes.count_progress`): in step with its reads
    as it is converted, the rest once it is done, whatever its result.

    ``hold_guessed``: a source whose start is a guess (a Codex rollout whose
    header is damaged) is not imported but said busy, for the run to import
    it once its other sessions are done: a worker could not see the session
    another makes meanwhile of a whole copy of it (see Filing.earlier_start).

    ``dry_records`` (a dry run's): the records the run's earlier sources would
    have written, by awl log path.  A source whose log is among them is
    checked against that record, as an import would find it (a copy of a
    session the run takes first is unchanged, or a conflict), and one that
    would write adds its own."""
    share = _Share(spec.size)
    r = ImportResult(spec.path, spec.format, explicit=spec.explicit, dry_run=dry_run)
    r.bytes = spec.size  # as planned; read again once the file is open
    try:
        fd = open_source(spec.path)
    except OSError as exc:
        r.error = f"{path_text(spec.path)}: cannot read: {exc.strerror or exc}"
        # A link to nothing, a loop of links, a device or a FIFO names no session
        # (an unreadable file may well hold one): it is not counted as one.
        r.is_session = exc.errno not in (errno.ENOENT, errno.ELOOP, errno.EISDIR)
        share.finish()
        return r, _nothing
    # The cyclic collector is held off: a batch is many containers that live until it
    # is written, which every collection would go through again (cycles, if any, wait).
    collecting = gc.isenabled()
    gc.disable()
    work = _Import(
        spec, r, fd, session_dir, dry_run, system_prompt, fallback_cwd, run, share, hold_guessed
    )
    work.dry_records = dry_records if dry_run else None
    stopped = False
    try:
        work.run()
        would = r.would_record if r.status in ("imported", "updated") else None
        if work.dry_records is not None and would is not None and r.path is not None:
            # The latest: a copy that holds more than the one before adds to the log,
            # whose last record then is its own.
            work.dry_records[r.path] = would
    except (SessionError, OSError, FormatError) as exc:
        # (FormatError: an entry the store would not write, which the converters
        # never plan; said as this session's error, not the run's end.)
        work.failed(exc)
    except BaseException:
        stopped = True
        work.finish()  # stopped (Ctrl-C) after the last write: the log is named still
        raise
    finally:
        os.close(fd)
        if collecting:
            gc.enable()
        if not stopped:
            share.finish()  # (a stopped one's bar stays where its reading stopped)
    return r, work.finish


class _Share:
    """A source's part of the run's progress: the bytes of its file read, scaled to
    its planned size and never past it (the file read may be larger: a
    compressed rollout's unpacked copy, a file grown since it was planned)."""

    def __init__(self, planned: int) -> None:
        self.planned = max(0, planned)
        self.counted = 0
        self.scale = 1.0

    def reading(self, size: int) -> None:
        """The file about to be read holds ``size`` bytes."""
        self.scale = self.planned / size if size > 0 else 1.0

    def read(self, n: int) -> None:
        """``n`` more bytes of it were read; in a worker of a run that is stopping,
        raises :class:`awl._processes.Stopping` (the import ends there, between
        two lines, as a Ctrl-C ends one in this process: a source of gigabytes
        does not hold a stop up until its end)."""
        step = min(self.planned - self.counted, int(n * self.scale))
        if step > 0:
            self.counted += step
            count_progress(step)
        stop_if_asked()

    def finish(self) -> None:
        """The source is done: the rest of its planned size."""
        if self.counted < self.planned:
            count_progress(self.planned - self.counted)
            self.counted = self.planned


def _nothing() -> None:
    pass


@dataclass(slots=True)
class _File:
    """A source file of the session and how much of it is taken."""

    rel: str  # "" for the session's own file
    fd: int
    size: int
    # rel as the records and the entries name it (path_text): what they match on.
    key: str = ""
    consumed: int = 0
    lines: int = 0
    hasher: Any = None
    hashed: int = 0
    known: dict[str, Any] | None = None  # the last record's state of it
    # The hash the records give of it: the one its first record named.
    algo: str = field(default_factory=hash_of)
    # The file's times, and when they were read: when the bytes taken were last
    # known to be on disk as they were read.
    stamp: tuple[int, int] = (0, 0)
    looked: int = 0

    def __post_init__(self) -> None:
        self._look()

    def _look(self) -> tuple[int, int]:
        looked = time.time_ns()
        st = os.fstat(self.fd)
        self.stamp, self.looked = (st.st_mtime_ns, st.st_ctime_ns), looked
        return self.stamp

    def state(self) -> dict[str, Any]:
        self.hasher = digest(self.fd, self.consumed, self.hasher, self.hashed, self.algo)
        self.hashed = self.consumed
        return {"consumed": self.consumed, "lines": self.lines, self.algo: self.hasher.hexdigest()}

    def taken_as_read(self, hexdigest: str) -> bool:
        """Whether the bytes taken, ``[0, consumed)`` with the hash ``hexdigest``, are still
        on disk: a source rewritten in place while it is read (not only grown)
        would give a conversation of both versions.  Read again only when the
        file may have been written since it was last looked at: its times
        moved, or were that close to the look that a write in the same clock
        tick would not have moved them."""
        before, looked = self.stamp, self.looked
        if self._look() == before and looked - max(before) > _SETTLED_NS:
            return True
        return (
            self.consumed == 0
            or digest(self.fd, self.consumed, name=self.algo).hexdigest() == hexdigest
        )


_SETTLED_NS = 2_000_000_000
"""A source last written longer ago than this when it is looked at is not read
again to be checked unless its times move (a clock tick is far shorter)."""


class _Import:
    def __init__(
        self,
        spec: SourceSpec,
        result: ImportResult,
        fd: int,
        session_dir: str | os.PathLike[str] | None,
        dry_run: bool,
        system_prompt: str | None,
        fallback_cwd: str | os.PathLike[str] | None,
        run: str | None,
        share: _Share,
        hold_guessed: bool = False,
    ) -> None:
        self.spec, self.r, self.fd = spec, result, fd
        self.share = share  # the source's part of the run's progress
        self.fallback_cwd = fallback_cwd
        self.run_id = run
        self.filing = Filing(session_dir, run, fallback_cwd)
        self.hold_guessed = hold_guessed  # see start_import
        self.shown = path_text(spec.path)  # the path as messages and records give it
        self.session_dir = session_dir
        self.dry_run = dry_run
        self.system_prompt = system_prompt
        self.manager: SessionManager | None = None
        # The manager of a new log written but not yet synced and named: closed by
        # finish() (see start_import), which may still fail.
        self.pending: SessionManager | None = None
        self.naming: threading.Event | None = None  # set once finish() has run
        self.imported = Imported()
        self.written = 0
        self.marks = (0, 0, 0)  # skipped lines, repeated lines, notes: recorded up to here
        # Skipped lines, notes, entries and kinds not recognised that the result
        # holds up to the last batch written (or the conversion's start); None
        # before converting.
        self.saved: tuple[int, int, int, dict[str, int]] | None = None
        # As it was before the batch finish() may undo.
        self.saved_unplaced: tuple[int, int, int, dict[str, int]] | None = None
        self.raw: bytes | None = None  # the bytes of the line last parsed, unless repaired
        # The objects after the first of a line that held several (split_glued).
        self.glued: list[tuple[dict[str, Any], bytes | None]] = []
        self.head: list[tuple[int, dict[str, Any]]] = []
        self.head_repaired: set[int] = set()  # lines of the head taken repaired
        self.head_raws: dict[int, bytes] = {}  # the bytes of the head's lines
        self.dry_records: dict[str, dict[str, Any]] | None = None  # see start_import
        # Whether an object is one of the format's lines (set as converting begins).
        self.is_line: Callable[[dict[str, Any]], bool] = lambda obj: False
        self.hashing: Hashing | None = None  # the main file's, kept as it is read
        self.earlier: Any = None  # the source the last import record names
        self.earlier_would = False  # and that record is one this dry run would write
        self.resumed = False  # awl appended turns after the last import
        self.moved = False  # a batch written (or, dry, planned) holds a tree entry: the leaf's
        self.awl_leaf: str | None = None  # the leaf those turns left
        # The converter's leaf where the replay of what earlier imports took ended:
        # the source's position awl's leaf stands for.
        self.leaf_before: str | None = None

    # ── deciding ──

    def run(self) -> None:
        r, spec = self.r, self.spec
        objs = self.head = head(self.fd, repaired=self.head_repaired, raws=self.head_raws)
        if not objs:
            # No whole JSON object at its start: nothing at all, or not a session log.
            if _blank(self.fd):
                r.status, r.error = "empty", f"{self.shown}: nothing to import: it is empty"
                r.blank = True
            elif _first_line_unfinished(self.fd):
                # A session the tool has only begun to write: as a torn last line
                # is, it is left for the next import, not called no session log.
                r.status = "empty"
                r.error = (
                    f"{self.shown}: nothing to import yet: its first line is not whole "
                    "(still being written?); the next import takes it"
                )
            else:
                names = FORMAT_NAMES[spec.format] if spec.format else "pi, Claude Code or Codex"
                r.status, r.error = "refused", f"{self.shown}: not a session log of {names}"
            return
        found = detect(objs)
        if found == "awl":
            r.status, r.looks_like = "refused", "awl"
            r.error = f"{self.shown}: an awl session log, not another tool's"
            return
        fmt = spec.format or found
        if fmt is None or fmt not in FORMATS:
            r.status = "refused"
            r.error = f"{self.shown}: not a session log of pi, Claude Code or Codex"
            return
        if spec.format is not None and found is not None and found != spec.format:
            r.status, r.looks_like = "refused", found
            r.error = (
                f"{self.shown}: not a {FORMAT_NAMES[fmt]} session "
                f"(it looks like {FORMAT_NAMES.get(found, found)}'s)"
            )
            return
        if found is None and not any(_WRITES[fmt](o) for _, o in objs):
            # Read as the format named, a file that has none of its lines: no session of
            # it, as it would be none of any format without --from.
            r.status = "refused"
            r.error = (
                f"{self.shown}: not a session log of {FORMAT_NAMES[fmt]} (none of its "
                "first lines is of a kind it writes)"
            )
            return
        r.format = fmt
        mod = _MODULES[fmt]
        if fmt == "claude" and not any(_claude.is_chain(o) for _, o in objs):
            # More metadata lines than a head holds (summaries, file snapshots): the
            # conversation, if there is one, is further on.
            objs = [*objs, *read_on(self.fd, objs[-1][0], _claude.is_chain)]
        found_info = mod.info(objs, spec.path)
        if not isinstance(found_info, SourceInfo):
            # Nothing to import in a file met in a folder: metadata alone, or a
            # subagent's transcript whose session's file is gone (a tool's clean-up
            # left it), which a daily run would otherwise fail on every time.
            # Named on the command line, the latter is an error.
            r.status = (
                "empty"
                if "only metadata" in found_info
                or (not spec.explicit and "a subagent's transcript" in found_info)
                else "error"
            )
            # Read as the format named, a file that looks like none: no session.
            r.is_session = found is not None or r.status == "empty"
            # An error is said as one: "nothing to import" is for a file that has none.
            lead = "nothing to import" if r.status == "empty" else "cannot import"
            r.error = f"{self.shown}: {lead}: {found_info}"
            return
        info = found_info
        if info.start_guessed and self.hold_guessed:
            r.status = "busy"
            r.error = f"{self.shown}: held until the run's other sessions are imported"
            return
        if info.start_guessed:
            before = self.filing.earlier_start(fmt, info)
            info.notes.append(
                "its start is taken from "
                + ("the session an earlier import made of it" if before else "its first line read")
            )
        r.notes.extend(info.notes)
        relative = bool(info.cwd) and not os.path.isabs(info.cwd) and not windows_path(info.cwd)
        # U+FFFD stands for bytes that were not UTF-8 (replaced by the tool that
        # wrote the log, or as awl read it): the folder it names is not the one
        # the session ran in, where `awl sessions` would never find it.
        lossy = "\ufffd" in info.cwd
        if not info.cwd or relative or lossy:
            # The log records none (early Codex rollouts), or one that means another
            # directory wherever awl runs ("~/proj", "."): where an earlier import
            # filed it, else where the user said, else refused saying how.
            what = (
                f"its working directory {info.cwd!r} is not an absolute path"
                if relative
                else f"its working directory {info.cwd!r} is not its folder's name (U+FFFD "
                "stands for bytes that were not UTF-8)"
                if lossy
                else info.no_cwd or "its log records no working directory"
            )
            earlier = self.filing.filed_cwd(fmt, info)
            if earlier is None and self.fallback_cwd is None:
                under = (
                    "; awl files a session under its folder"
                    if lossy
                    else (", which awl files a session under")
                )
                r.error = f"{self.shown}: {what}{under}: awl import --cwd DIR takes it as DIR's"
                return
            info.cwd = earlier if earlier is not None else os.fspath(self.fallback_cwd or "")
            if earlier is None:
                r.notes.append(f"{what}: filed under {path_text(info.cwd)} (--cwd)")
                r.by_fallback_cwd = True
        if "\x00" in info.cwd:
            # No file system takes it: the session's folder could not be named.
            r.error = f"{self.shown}: its working directory {info.cwd!r} holds a NUL character"
            return
        sid = session_id_for(fmt, info.source_id, info.start)
        path = project_dir(info.cwd, self.session_dir) / session_file_name(info.start, sid)
        r.session, r.path, r.source_id = sid, str(path), info.source_id
        wait_named(path.name)
        try:
            os.lstat(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            # The session's folder may not be looked in (another user's, made with
            # sudo): whether its log is there is not known.  Said of the folder, the
            # same for each of its sessions, so said once.
            r.error = f"{path_text(path.parent)}: cannot look in it: {exc.strerror}"
            return
        if not self.dry_run:
            self._settle_leftovers(path)
        if not os.path.lexists(path):
            other = self.filing.filed_elsewhere(path, info.cwd)
            if other is not None:
                # The same source session with another cwd (a copy from another
                # machine, a rewritten log): a second log would carry the same id,
                # which a lookup from any third directory could not resolve.
                where, cwd = other
                r.status = "conflict"
                r.error = (
                    f"{self.shown}: not imported: its session ({info.source_id}) was "
                    f"imported as the awl session {sid} under another working directory, "
                    f"{cwd} ({where}); this file records {info.cwd}, and a second log would "
                    f"carry the same id (move {where} away and import again to file it here)"
                )
                return
            twin = self.filing.same_source(path, fmt, info)
            if twin is not None:
                # The same source session with another start (an import of a copy whose
                # header was damaged, so its start was a guess): a second log would
                # make the source's id name two sessions.
                log = creating_log(twin.name)
                made = twin if log is None else twin.with_name(log)
                how = "was imported" if log is None else f"began to be imported ({twin})"
                r.status = "conflict"
                r.error = (
                    f"{self.shown}: not imported: its session ({info.source_id}) {how} as "
                    f"the awl session {made.name[-42:-6]} ({made}), which starts at another "
                    f"time than this file's {info.start} (an import of a copy whose header "
                    f"was damaged?); move it away and import again to make it of this file"
                )
                return
        self._import(fmt, info, path)
        if r.status == "unchanged" and info.notes:
            # Said when the session was imported: not again on each run that adds nothing.
            r.notes = [n for n in r.notes if n not in info.notes]

    def _settle_leftovers(self, path: Path) -> None:
        """What an import of this session killed before it named its log left (its
        hidden ``.creating`` file): settled as ``awl reindex`` settles it, so that
        this import goes on from the batches it holds (or, when the log exists
        since, keeps its bytes aside); one locked by a live creator, or written
        to in the last minute by a process that may still run, is left alone.
        A bulk run looks them up in the listing it took when it began (a folder
        listed per session would cost a run of many sessions in one folder
        their square)."""
        try:
            found = self.filing.creations_left(path)
            if found is None:
                found = [tmp for tmp, log in creations(path.parent) if log == path]
        except (OSError, SessionError):
            return
        for tmp in found:
            settle_creation(tmp, path)

    def _import(self, fmt: str, info: SourceInfo, path: Path) -> None:
        r = self.r
        files = self._files()
        r.bytes = sum(f.size for f in files)
        if self.spec.path.endswith(".zst"):
            # The file's size, as a progress bar counts it, not what it unpacks to.
            with contextlib.suppress(OSError):
                r.bytes += os.stat(self.spec.path).st_size - files[0].size
        try:
            would = self.dry_records.get(str(path)) if self.dry_records else None
            if would is not None:
                # A copy of a session this dry run would import first: checked against
                # the record that import would have written, as the log would be.
                self.earlier_would = True
                if not self._check(path, files, would):
                    return
                files = self._as_if_alone(files, would)
            exists = os.path.lexists(path)
            cut = exists and cut_short(path) is not None
            # Decided without the lock when the last record says so (unchanged, a
            # conflict); a log with no record yet is looked at under it, below.
            record = last_record(path) if exists and not cut else None
            if record is not None and not self._check(path, files, record):
                return
            if exists and not self.dry_run:
                self.manager = SessionManager.open(path)
                cut = cut_short(path) is not None  # under the lock now
                if self.manager.stats.trimmed:
                    # As a resume and reindex say it: nothing is moved without a word.
                    r.notes.append(
                        f"the awl log's torn last line ({_bytes(self.manager.stats.trimmed)}) "
                        f"was moved to {path_text(os.fspath(corrupt_path(path)))}"
                    )
            elif exists and (refused := writing_problem(path)) is not None:
                # A dry run opens it as the import's writer would, writing nothing.
                raise refused
            elif exists and held_by_writer(path):
                # A dry run looks without the lock: the import would find it held.
                raise SessionBusy(path)
            if exists:
                # Under the lock now: what earlier imports wrote, from the log itself.
                self.imported = read_records(path)
                if cut:
                    r.notes.append(
                        "an earlier import of this session was cut short (a crash, or a "
                        "kill, while it wrote): the entries it wrote stay in the log, off "
                        "the conversation's branch, and that part of the source is "
                        + ("to be taken again" if self.dry_run else "taken again")
                    )
                if self.imported.last is None and (
                    cut or (self.manager is not None and self.manager.state.entry_count == 0)
                ):
                    # The first batch was cut short: imported as new, into this log
                    # (what the cut batch wrote stays, another tree beside it).
                    exists = False
                elif not self._check(path, files, self.imported.last):
                    return
                if self.manager is not None or self.dry_run:
                    leaf = self.manager.leaf_id if self.manager is not None else _leaf_of(path)
                    # awl's own turns (a resume) after what imports wrote: the source's
                    # new lines become the current branch, which the user is told (a
                    # dry run too: it is where a user looks before importing).
                    made = set(self.imported.ids.values()) | self.imported.cut_ids
                    self.resumed = leaf is not None and leaf not in made
                    self.awl_leaf = leaf
            self._convert(fmt, info, files, path, fresh=not exists)
            if self.manager is not None and not self.manager.placed:
                self.pending, self.manager = self.manager, None
                self.naming = NAMING[path.name] = threading.Event()
        finally:
            for f in files[1:]:
                os.close(f.fd)
            if self.manager is not None:
                self.manager.close()

    def finish(self) -> None:
        """Sync and name the new log the import left so (nothing when none): the
        result says it is imported only once that is done."""
        manager, self.pending = self.pending, None
        if manager is None:
            return
        try:
            manager.close()
        except SessionWriteError as exc:
            # Nothing of the log is left: the result says none of what it held.
            self.saved = self.saved_unplaced
            self.failed(
                SessionBusy(f"{self.path}: being imported by another process")
                if os.path.exists(self.path)
                else exc
            )
        except (SessionError, OSError) as exc:
            self.failed(exc)
        finally:
            if self.naming is not None:
                if NAMING.get(self.path.name) is self.naming:
                    del NAMING[self.path.name]
                self.naming.set()

    def failed(self, exc: SessionError | OSError | FormatError) -> None:
        """Say in the result why the import failed: what it says of the lines
        converted is only what the batches written hold."""
        r, shown = self.r, self.shown
        self.forget_unsaved()
        if isinstance(exc, SessionBusy):
            r.status = "busy"
            r.error = (
                f"{shown}: not imported: its awl session {r.path} is open in another awl "
                "process (a resume, or another import of this session, from this file or a "
                "copy); import again once it is closed"
            )
            return
        r.status = "error"
        r.errno = getattr(exc, "errno", None)
        text = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
        # Said of the source, when it is about its own awl log too; not one about a
        # folder other sessions share (said once for all: see describe()).
        own = r.path is not None and text.startswith(f"{r.path}: ")
        shared = text.startswith("/") and not own
        r.error = text if text.startswith(shown) or shared else f"{shown}: {text}"

    def _files(self) -> list[_File]:
        files = [_File("", self.fd, os.fstat(self.fd).st_size)]
        base = os.path.dirname(self.spec.path)
        for rel in self.spec.links:
            link = f"{path_text(rel)}: a link, passed over: not a file of the session's"
            self.r.notes.append(link)
        for rel in self.spec.extras:
            if rel.endswith(os.sep):
                # A folder of the session's that could not be listed when planned.
                try:
                    os.listdir(os.path.join(base, rel))
                except OSError as exc:
                    self.r.notes.append(f"{path_text(rel)}: cannot list: {exc.strerror or exc}")
                    self.r.unread.append(path_text(rel))
                continue
            try:
                fd = open_source(os.path.join(base, rel))
            except OSError as exc:
                self.r.notes.append(f"{path_text(rel)}: cannot read: {exc.strerror or exc}")
                self.r.unread.append(path_text(rel))
                continue
            files.append(_File(rel, fd, os.fstat(fd).st_size, path_text(rel)))
        return files

    def _check(self, path: Path, files: list[_File], record: dict[str, Any] | None) -> bool:
        """Compare the source files with what the record says was taken: False when
        the result is decided (unchanged, conflict, error)."""
        r = self.r
        if record is None:
            r.error = f"{path}: an awl session with this id exists but no import wrote it"
            return False
        state = record.get("files") or {}
        self.earlier = record.get("source")
        grown = False
        for f in files:
            # Its size now, after the record was read: the one taken when the file was
            # opened may be older than what another import, since, took of it grown
            # (which is no shorter file).
            f.size = os.fstat(f.fd).st_size
            known = state.get(f.key)
            f.known = known if isinstance(known, dict) else None
            f.algo = hash_of(f.known)
            if f.known is None:
                grown = True
                f.consumed = f.lines = f.hashed = 0
                f.hasher = None
                continue
            taken = int(f.known.get("consumed", 0))
            if not f.rel.endswith(".jsonl") and f.rel:
                # A whole JSON document (a subagent's .meta.json): taken again if it changed.
                same = f.size == taken and digest(
                    f.fd, taken, name=f.algo
                ).hexdigest() == f.known.get(f.algo)
                f.consumed = f.size if same else 0
                f.lines = int(f.known.get("lines", 1)) if same else 0  # as first recorded
                f.known = f.known if same else None
                grown = grown or not same
                continue
            if f.size < taken:
                if not f.rel and self._holds_part_of_the_import(path, f, taken):
                    # An older copy (or the tool's own file, after a longer copy
                    # was imported): nothing in it that the session lacks.
                    r.status = "unchanged"
                    return False
                return self._conflict(f, "it is shorter than what was imported")
            f.hasher = digest(f.fd, taken, name=f.algo)
            f.hashed = f.consumed = taken
            f.lines = int(f.known.get("lines", 0))
            if f.hasher.hexdigest() != f.known.get(f.algo):
                return self._conflict(f, "it was rewritten since it was imported")
            grown = grown or f.size > taken
        if not grown:
            r.status = "unchanged"
            return False
        return True

    def _as_if_alone(self, files: list[_File], record: dict[str, Any]) -> list[_File]:
        """The files, as taken before a dry run's :meth:`_check` against a record an
        earlier source of the run would write, which did not decide the result:
        this source holds more, which a real run adds to that import and a dry
        run, writing nothing, cannot show; said as if alone."""
        self.earlier, self.earlier_would = None, False
        self.r.notes.append(
            f"a copy of this session earlier in the run would be imported first "
            f"({record.get('source')}); this file holds more, said here as if alone"
        )
        return [_File(f.rel, f.fd, os.fstat(f.fd).st_size, f.key) for f in files]

    def _holds_part_of_the_import(self, log: Path, f: _File, taken: int) -> bool:
        """Whether the main file ``f``, shorter than the ``taken`` bytes imported, is
        a start of what was imported: its hash is one an earlier import of the
        awl ``log`` recorded at that length, or it is the start of the file last
        imported, which still holds what was taken (its hash up to ``taken`` is
        the record's)."""
        mine: dict[str, str] = {}  # the file's hash of each kind a record gives

        def hashed(name: str) -> str:
            if name not in mine:
                mine[name] = digest(f.fd, f.size, name=name).hexdigest()
            return mine[name]

        records = self.imported.records
        if not records:
            # Decided before the lock, from the last record alone: the earlier
            # ones are read here (appended only, so a read without it is whole).
            try:
                records = read_records(log).records
            except SessionError:
                records = []  # the locked pass reports the log's own problem
        for record in records:
            known = (record.get("files") or {}).get("")
            if not isinstance(known, dict) or known.get("consumed") != f.size:
                continue
            name = hash_of(known)
            if known.get(name) == hashed(name):
                return True
        here = path_text(os.path.abspath(self.spec.path))
        if not isinstance(self.earlier, str) or self.earlier == here or f.known is None:
            return False
        try:
            fd = open_source(self.earlier)
        except OSError:
            return False
        try:
            start = digest(fd, f.size, name=f.algo)
            if start.hexdigest() != hashed(f.algo):
                return False
            return bool(digest(fd, taken, start, f.size).hexdigest() == f.known.get(f.algo))
        except OSError:
            return False
        finally:
            os.close(fd)

    def _conflict(self, f: _File, why: str) -> bool:
        r = self.r
        r.status = "conflict"
        here = path_text(os.path.abspath(self.spec.path))
        if isinstance(self.earlier, str) and self.earlier != here:
            # Another file holds the same source session (a copy): this one is not it.
            gone = "" if os.path.lexists(self.earlier) else " (no longer there)"
            was, taken = (
                ("would be", "would be taken") if self.earlier_would else ("was", "was taken")
            )
            r.error = (
                f"{self.shown}: not imported: another file, {self.earlier}{gone}, holds the "
                f"same session ({r.source_id}) and {was} imported as the awl session "
                f"{r.session}; this file differs from what {taken} from it"
            )
            return False
        base = os.path.dirname(self.spec.path)
        name = self.shown if not f.rel else path_text(os.path.join(base, f.rel))
        r.error = (
            f"{name}: {why}; the awl session {r.session} keeps the earlier import "
            f"(remove {r.path} and import again to start over)"
        )
        return False

    # ── converting ──

    def _convert(
        self, fmt: str, info: SourceInfo, files: list[_File], path: Path, *, fresh: bool
    ) -> None:
        r = self.r
        self._save()  # what was said before converting stays, whatever the writes do
        b = Builder()
        b.notes = r.notes  # one list: the record of each batch says its own
        conv = _CONVERTERS[fmt](b, info)
        self.b, self.conv, self.info, self.files, self.path = b, conv, info, files, path
        types = _LINE_TYPES[fmt]
        self.is_line = lambda obj: obj.get("type") in types
        main = files[0]
        boundary = main.consumed
        # Where earlier imports ended a batch or a pass: replaying flushes there, as they did.
        cuts = sorted(
            {
                int(rec["files"][""]["consumed"])
                for rec in self.imported.records
                if isinstance(rec.get("files", {}).get(""), dict)
            }
        )
        next_cut = 0
        first_line = main.lines + 1
        # The lines the format's detection parsed already, when nothing is replayed.
        # Not a line's glued objects (several under its number): parsed again, as a line.
        counts = Counter(n for n, _ in self.head)
        # Not a repaired line's: parsed again, to say so in its note.
        fixed = self.head_repaired
        cached = (
            {n: o for n, o in self.head if counts[n] == 1 and n not in fixed}
            if boundary == 0
            else {}
        )
        if ROOT_KEY in self.imported.ids:
            b.known.add(ROOT_KEY)
        if fresh and self.system_prompt is not None:
            text = self.system_prompt.replace("{cwd}", info.cwd)
            b.add(Planned(ROOT_KEY, None, info.start, role="system", content=[DiskText(text)]))
        b.live = boundary == 0
        may_cut = getattr(conv, "boundary", None)
        start_batch = boundary
        loads, feed = orjson.loads, conv.feed
        # The main file is hashed as it is read, past what the check hashed already.
        hashing = Hashing(
            main.hasher.copy() if main.hasher is not None else new_hash(main.algo), boundary
        )
        self.hashing = hashing
        # Lines an earlier import skipped: replayed as skipped (one that awl now reads,
        # glued objects, was not written then).
        skipped_before = {
            n
            for rec in self.imported.records
            for f, n, why in rec.get("skipped", ())
            if f == ""
            and not str(why).startswith("an incomplete last line")
            and not str(why).startswith(TORN_START)  # its whole objects were taken
        }
        fd = main.fd
        b.read = lambda offset, length: os.pread(fd, length, offset)
        # The lines parse must look at closer: long digit runs, many brackets (lines()).
        longs: set[int] = set()
        deep: set[int] = set()
        self.share.reading(main.size)
        reads = lines(
            main.fd, hashing=hashing, numbers=longs, on_read=self.share.read, brackets=deep
        )
        for number, end, raw, terminated in reads:
            start = end - len(raw) - terminated
            b.span = (start, len(raw))
            if start < boundary:
                # Taken by an earlier import (which may have taken a last line before
                # its newline came): replayed to rebuild the converter's state, its
                # entries not kept (they are in the log).
                taken = raw[: boundary - start]
                obj, _, _ = (
                    parse(taken, number in longs, number in deep)
                    if not blank(taken)
                    else (None, None, None)
                )
                if obj is not None:
                    feed(obj, number)
                elif terminated and not blank(taken) and number not in skipped_before:
                    whole = split_glued(taken)
                    if whole is None and (torn := after_torn(taken, self.is_line)) is not None:
                        whole = torn[1]  # taken then too, its torn start skipped
                    for o, _, _ in whole or ():
                        feed(o, number)
                while next_cut < len(cuts) and cuts[next_cut] <= min(end, boundary):
                    conv.flush()
                    next_cut += 1
                raw = raw[boundary - start :]
                if blank(raw):
                    continue
                # The earlier import took this line's first object before its newline
                # came; more came after it on the line: taken now.
                b.notes.append(
                    f"line {number}: more JSON followed the object an earlier import took "
                    "before its newline came; taken"
                )
            if not b.live:
                self.leaf_before = conv.leaf()
            b.live = True
            obj = cached.pop(number, None)
            if obj is not None and self.head_raws.get(number) != raw:
                obj = None  # the line changed since the format was read: parsed as it is now
            if obj is None:
                # The common case inline: a whole line that is a JSON object.
                try:
                    obj = loads(raw) if terminated else None
                except orjson.JSONDecodeError:
                    obj = None
                if type(obj) is not dict or number in longs or number in deep:
                    # Not an object, or one to look at closer (a number orjson
                    # rounded, a nesting deeper than an import takes).
                    closer = (number in longs, number in deep)
                    obj = self._parsed(main, number, end, raw, terminated, closer, obj)
                    if obj is None:
                        continue
                else:
                    self.raw = raw
            else:
                self.raw = raw
            b.raw = _unterminated(self.raw)
            if (
                (end - start_batch > BATCH_BYTES or len(b.batch) > BATCH_ENTRIES)
                and (conv.safe() or (may_cut is not None and may_cut(obj)))
                and main.consumed > start_batch
            ):
                conv.flush()
                self._write(conv, final=False)
                stop_if_asked()  # (a source read in one piece has no read between)
                start_batch = main.consumed
            feed(obj, number)
            if self.glued:
                self._feed_glued(number)
            main.consumed = end
            main.lines = number
        r.lines += max(0, main.lines - first_line + 1)
        if not b.live:
            self.leaf_before = conv.leaf()
        b.live = True
        conv.flush()
        b.resolve(*self._fallback(conv))
        for f in files[1:]:
            self._extra(f, conv)
        changed = any(f.known is None or f.consumed != f.known.get("consumed") for f in files)
        if b.batch or changed:
            stop_if_asked()  # (a worker that found the disk full: nothing is written)
            self._write(conv, final=True)
        if self.written == 0:
            r.status = "unchanged"
            for name, n in b.unrecognised.items():
                r.unrecognised[name] = r.unrecognised.get(name, 0) + n
        else:
            r.status = "imported" if fresh else "updated"
            if self.resumed and self.moved:
                # Only when the leaf moved: lines outside the tree (a title, a tool
                # output kept apart) leave awl's turns where a resume goes on.
                stay, are = ("would stay", "would be") if self.dry_run else ("stay", "are")
                r.notes.append(
                    f"the turns awl added since the last import {stay} on their branch (awl "
                    f"--resume {r.session}:{self.awl_leaf} goes on from them); the source's "
                    f"new lines {are} the current one, where awl --resume goes on"
                )
        r.duplicates = b.duplicates

    def _feed_glued(self, number: int) -> None:
        """The objects that followed the first on line ``number``, as lines of their own."""
        for obj, part in self.glued:
            self.b.raw = part
            self.conv.feed(obj, number)
        self.glued = []

    def _fallback(self, conv: Converter) -> tuple[str, str]:
        last = getattr(conv, "model", None)
        provider = getattr(conv, "provider", None)
        if isinstance(last, str) and isinstance(provider, str) and last != UNKNOWN:
            return provider, last
        # A prompt no answer names (yet) went, as far as the source says, to the
        # model that answered last.
        return self.b.last_model or self.b.first_model or conv.fallback()

    def _parsed(
        self,
        f: _File,
        number: int,
        end: int,
        raw: bytes,
        terminated: bool,
        closer: tuple[bool, bool],
        read: Any = None,
    ) -> dict[str, Any] | None:
        """A new line as an object; None (and the line accounted for) when it is not one.
        ``closer``: whether it holds a long run of digits, and many brackets;
        ``read``: what orjson made of it, if it was parsed already (see :func:`parse`)."""
        r = self.r
        if blank(raw):
            f.consumed, f.lines = end, number
            return None
        obj, problem, repaired = parse(raw, *closer, read if type(read) is dict else None)
        self.raw = None if repaired else raw
        if obj is None and terminated and (glued := split_glued(raw)) is not None:
            (obj, self.raw, _), *rest = glued
            self.glued = [(o, part) for o, part, _ in rest]
            r.notes.append(
                f"{f.key or 'line'} {number}: {len(glued)} JSON objects with no newline "
                "between them; each taken"
            )
            r.notes.extend(
                f"{f.key or 'line'} {number}: object {k}: {what}"
                for k, (_, _, what) in enumerate(glued, 1)
                if what
            )
        if obj is None and terminated and (torn := after_torn(raw, self.is_line)) is not None:
            # A torn line, then whole ones with no newline before them: pi goes on so
            # after a crash.  The torn start is skipped (and said), the rest taken.
            at, glued = torn
            (obj, self.raw, _), *rest = glued
            self.glued = [(o, part) for o, part, _ in rest]
            r.skipped.append(
                (f.key, number, f"{TORN_START}{at} bytes, not JSON) before a whole one on it")
            )
            r.notes.extend(
                f"{f.key or 'line'} {number}: object {k}: {what}"
                for k, (_, _, what) in enumerate(glued, 1)
                if what
            )
        if obj is None:
            if not terminated:
                # Still being written, perhaps: left for the next import.
                r.skipped.append((f.key, number, "an incomplete last line (left for later)"))
                return None
            r.skipped.append((f.key, number, problem or "not JSON"))
            f.consumed, f.lines = end, number
            return None
        if repaired:
            r.notes.append(f"{f.key or 'line'} {number}: {repaired}")
        return obj

    def _extra(self, f: _File, conv: Converter) -> None:
        """The new lines of a file that belongs to the session (a subagent's transcript)."""
        if not f.rel.endswith(".jsonl"):
            # A whole file (a subagent's .meta.json, a tool's output kept apart):
            # taken again when it changed.
            if f.known is not None:
                return
            data = _read_all(f.fd, f.size)
            # The hash of what is taken, not of what the file holds when it is recorded.
            f.hasher, f.hashed = new_hash(f.algo, data), len(data)
            f.consumed, f.lines = len(data), 1
            obj, _, repaired = parse(data) if f.rel.endswith(".json") else (None, None, None)
            self.b.raw = None
            if obj is not None and not repaired:
                conv.extra(f.key, obj, 1)
            else:
                conv.extra_file(f.key, data)  # not a JSON object: its bytes as they are
            return
        start = f.consumed
        around = os.pread(f.fd, 2, start - 1) if start else b""
        if around[:1] not in (b"", b"\n") and around[1:] == b"\n":
            # The last line taken was a whole object without its newline, which has
            # come since: it ends that line, and starts none.
            start += 1
        # Hashed as it is read, as the main file is: what is recorded is what was taken.
        kept = f.hasher.copy() if f.hasher is not None else None
        hasher = digest(f.fd, f.consumed, kept, f.hashed, f.algo)
        hasher.update(around[1:] if start > f.consumed else b"")
        hashing = Hashing(hasher, start)
        longs: set[int] = set()
        deep: set[int] = set()
        for number, end, raw, terminated in lines(
            f.fd, start, f.lines + 1, hashing=hashing, numbers=longs, brackets=deep
        ):
            obj = self._parsed(f, number, end, raw, terminated, (number in longs, number in deep))
            if obj is None:
                self.r.lines += f.consumed == end  # blank or skipped: taken; torn: not yet
                continue
            self.r.lines += 1
            self.b.raw = _unterminated(self.raw)
            conv.extra(f.key, obj, number)
            for o, part in self.glued:
                self.b.raw = part
                conv.extra(f.key, o, number)
            self.glued = []
            f.consumed, f.lines = end, number
        taken = hashing.at(f.consumed)
        if taken is not None:
            f.hasher, f.hashed = taken, f.consumed

    # ── writing ──

    def _write(self, conv: Converter, *, final: bool) -> None:
        b, r = self.b, self.r
        if b.pending_users:
            b.resolve(*self._fallback(conv))
        planned = b.take()
        if final:
            leaf = conv.leaf()
            last = next((p.key for p in reversed(planned) if p.key is not None), None)
            if leaf is not None and (
                leaf != last
                if last is not None
                else leaf != self.leaf_before and leaf in self.imported.ids
            ):
                # The source's current position is not the last entry planned (a reply
                # whose blocks came on both sides of other lines; a rewind, which names
                # an earlier entry, perhaps with no tree line since the last import):
                # a node under it makes it the leaf, as awl's leaf is the last tree
                # entry.
                at = getattr(conv, "ts", self.info.start)
                planned.append(
                    Planned(f"@leaf{self.files[0].consumed}", leaf, at, type="x-import-leaf")
                )
        ids = self.imported.ids
        entries: list[NewEntry] = []
        pos: dict[str, int] = {}
        keys: list[str] = []
        last_tree: int | str | None = None
        record: dict[str, Any] = {
            "importer": 1,
            "format": conv.format,  # right after "importer": the listing reads it there
        }
        if self.info.subagent:
            # Right after "format", for the listing: no session a resume picks.
            record["subagent"] = self.info.subagent
        record |= {
            # Named again by the batch's last line: without it, the batch was cut short.
            "batch": os.urandom(4).hex(),
            "source": path_text(os.path.abspath(self.spec.path)),
            "sourceId": self.info.source_id,
            "files": {},
            "entries": 0,
            "keys": keys,
        }
        if not final:
            # More batches follow in this run: a record that is the log's last with
            # this says the run stopped before the end of what it read (a Ctrl+C).
            record["more"] = True
        entries.append(
            NewEntry(format_timestamp(time.time()), type=RECORD_TYPE, fields=record, node=False)
        )
        root = ROOT_KEY in b.known
        make = self._entry
        for p in planned:
            parent_ref: int | str | None = None
            if p.key is not None:
                parent = p.parent
                if parent is None and root and p.key != ROOT_KEY:
                    parent = ROOT_KEY
                if parent is not None:
                    parent_ref = pos.get(parent)
                    if parent_ref is None:
                        parent_ref = ids.get(parent)
                    if parent_ref is None and parent in b.known:
                        # Planned on the replay but never written (an older awl made
                        # no entry of it): under its nearest ancestor that was.
                        above = b.written_ancestor(parent, ids)
                        parent_ref = ids.get(above) if above is not None else None
                    if parent_ref is None:
                        r.notes.append(f"{p.key}: its parent {parent} was never imported")
                        parent_ref = last_tree
                pos[p.key] = len(entries)
                last_tree = len(entries)
                keys.append(p.key)
            entries.append(make(p, parent_ref))
        # What this batch's lines held that is not in its entries.
        if len(r.skipped) > self.marks[0]:
            record["skipped"] = [[f, n, why] for f, n, why in r.skipped[self.marks[0] :]]
        if b.unrecognised:
            record["unrecognised"] = b.unrecognised
            for name, n in b.unrecognised.items():
                r.unrecognised[name] = r.unrecognised.get(name, 0) + n
            b.unrecognised = {}
        repeated: list[int] = getattr(conv, "repeated", [])
        if len(repeated) > self.marks[1]:
            record["repeated"] = repeated[self.marks[1] :]
        notes = r.notes
        if len(notes) > self.marks[2]:
            record["notes"] = notes[self.marks[2] :]
        self.marks = (len(r.skipped), len(repeated), len(notes))
        main = self.files[0]
        taken = self.hashing.at(main.consumed) if self.hashing is not None else None
        if taken is not None:
            # The hash kept while reading, to where this batch ends: not read again.
            main.hasher, main.hashed = taken, main.consumed
        # Every file, those with nothing taken yet too (empty, or a first line still
        # being written): known, an import that finds them as they were is unchanged.
        record["files"] = {f.key: f.state() for f in self.files}
        for f in self.files:
            if not f.taken_as_read(record["files"][f.key][f.algo]):
                name = self.shown if not f.rel else f"{self.shown}: {f.key}"
                then = (
                    f"the awl session {path_text(os.fspath(self.path))} keeps what this "
                    "import took before (remove it and import again to take the file as it is)"
                    if self.written and not self.dry_run
                    else "nothing of it is written; import it again once its tool is done "
                    "writing it"
                )
                raise SessionError(f"{name}: rewritten while it was read, not only grown: {then}")
        # Files the last record knew that are gone now: their state is kept, so
        # that they are not taken again should they come back.
        before = self.imported.last
        for rel, state in (before.get("files", {}) if before else {}).items():
            record["files"].setdefault(rel, state)
        record["entries"] = len(entries) - 1
        r.entries += len(entries) - 1
        now = format_timestamp(time.time())
        entries.append(NewEntry(now, type=END_TYPE, fields={"batch": record["batch"]}, node=False))
        self.written += 1
        self.moved = self.moved or bool(keys)
        if keys and not final:
            # awl's leaf is now the batch's last tree entry: a rewind the final batch
            # makes, with no tree entry of its own, moves it from there.
            self.leaf_before = keys[-1]
        if self.dry_run:
            if self.written == 1 and not os.path.lexists(self.path):
                # What making the log would meet, looked at without making it.
                problem = creation_problem(self.path)
                if problem is not None:
                    raise SessionWriteError(problem)
            for key in keys:
                ids.setdefault(key, "")
            if final:
                self.r.would_record = {"source": record["source"], "files": record["files"]}
            return
        creating = self.manager is None
        if self.manager is None:
            provider, model = b.first_model or self._fallback(conv)
            assert self.r.session is not None
            self.manager = SessionManager.create(
                self.info.cwd,
                provider,
                model,
                session_dir=self.session_dir,
                session_id=self.r.session,
                created=self.info.start,
            )
            # In this run's listing from its creation on, whatever its writes do.
            self.filing.listed_log(self.path)
        kept = self.saved
        try:
            # A new log's last batch is synced and named by finish(): meanwhile the
            # next session is converted.
            # Every value of the entries was parsed from the source (orjson, or the
            # repair that keeps what orjson refuses as text): no NaN to look for.
            got = self.manager.append_entries(
                entries, checkpoint=final, sync=not final, parsed=True
            )
        except SessionWriteError:
            if creating and os.path.exists(self.path):
                # Another import of the same source made the log meanwhile.
                raise SessionBusy(f"{self.path}: being imported by another process") from None
            raise
        for key, at in pos.items():
            eid = got[at]
            if eid is not None:
                ids[key] = eid
        if not self.manager.placed:
            self.saved_unplaced = kept
        self._save()

    def _save(self) -> None:
        r = self.r
        self.saved = (len(r.skipped), len(r.notes), r.entries, dict(r.unrecognised))

    def forget_unsaved(self) -> None:
        """After a write failed (busy, disk full): what the result says of the lines
        converted (skipped, notes, entries, kinds not recognised) is only what
        the batches written hold.  What was said before converting (a torn tail
        moved aside, a file that cannot be read) stays."""
        if self.saved is None:
            return
        r = self.r
        skipped, notes, r.entries, r.unrecognised = self.saved
        del r.skipped[skipped:], r.notes[notes:]

    def _entry(self, p: Planned, parent: int | str | None) -> NewEntry:
        # Positional: an import makes one per entry, and keywords cost more.
        role = p.role
        if role is None:
            return NewEntry(
                p.timestamp, parent, None, None, None, p.type, p.fields, p.key is not None
            )
        if role == "assistant":
            message = DiskMessage(
                "assistant",
                p.content,
                p.provider or UNKNOWN,
                p.model or UNKNOWN,
                p.stop_reason or "stop",
                p.usage if isinstance(p.usage, Usage) else None,
            )
            return NewEntry(p.timestamp, parent, message, None, None, "message", p.fields)
        if role == "user":
            return NewEntry(
                p.timestamp,
                parent,
                DiskMessage("user", p.content, None, None, None, None, p.compaction),
                p.provider or UNKNOWN,
                p.model or UNKNOWN,
                "message",
                p.fields,
            )
        return NewEntry(
            p.timestamp, parent, DiskMessage("system", p.content), None, None, "message", p.fields
        )


def _leaf_of(path: Path) -> str | None:
    """The leaf of the awl log at ``path``, read without writing (a dry run's look);
    None when it cannot be read (the dry run then says nothing of awl's turns)."""
    try:
        with SessionManager.open(path, read_only=True) as manager:
            return manager.leaf_id
    except (SessionError, OSError):
        return None


def _unterminated(raw: bytes | None) -> bytes | None:
    """A source line as an opaque entry keeps it: less the ``\\r`` of a CRLF file's
    line end, which a reader of awl's log in text mode would take for a line end
    (other whitespace around the JSON is kept as it is)."""
    return raw[:-1] if raw is not None and raw.endswith(b"\r") else raw


def _blank(fd: int) -> bool:
    """Whether the file holds nothing but whitespace, after a byte order mark if it
    starts with one (read until it does not)."""
    pos = 0
    while data := os.pread(fd, 1 << 16, pos):
        if not blank(data.removeprefix(BOM) if pos == 0 else data):
            return False
        pos += len(data)
    return True


def _first_line_unfinished(fd: int, limit: int = 1 << 24) -> bool:
    """Whether the file is one line with no newline that begins a JSON object
    (a log whose first line its tool is still writing), of at most ``limit``
    bytes."""
    size = os.fstat(fd).st_size
    if size > limit:
        return False
    data = _read_all(fd, size).removeprefix(BOM)  # JSON parsers refuse the mark
    return b"\n" not in data and data.lstrip(JSON_SPACE).startswith(b"{")


def _read_all(fd: int, size: int) -> bytes:
    """The first ``size`` bytes of ``fd`` (fewer when it shrank)."""
    parts = []
    pos = 0
    while pos < size:
        data = os.pread(fd, size - pos, pos)
        if not data:
            break
        parts.append(data)
        pos += len(data)
    return b"".join(parts)


def _bytes(n: int) -> str:
    """``1 byte``, ``2 bytes``."""
    return "1 byte" if n == 1 else f"{n} bytes"
