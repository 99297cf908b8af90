"""SessionManager: one session log, opened for writing or reading.

The log is append-only and the only truth.  Opening it memory-maps the file,
checks the trailing line (a torn one is trimmed by a writer, its bytes kept
in ``<file>.corrupt``), and becomes *ready* — leaf, active model, message
count known — from the last checkpoint line and the lines after it.  When
there is no usable checkpoint, or entries follow it, the whole file is
indexed by the native scanner (or the index cache is reused) and the state
is derived from the index.  Messages are parsed with orjson only when they
are asked for.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from . import scanner
from ._numpy import np, npt
from .conversation import Conversation, Message
from .environment import fsync_enabled
from .errors import (
    AmbiguousSession,
    CorruptSession,
    FormatError,
    SessionBusy,
    SessionError,
    SessionNotFound,
    SessionWriteError,
)
from .format import (
    RECENT,
    Checkpoint,
    DiskMessage,
    DiskToolResult,
    EntryBase,
    FileEntry,
    MessageEntry,
    SessionEntry,
    SessionHeader,
    UnknownEntry,
    Usage,
    checkpoint_fits,
    checkpoint_locates,
    disk_message_to_internal,
    first_words,
    format_timestamp,
    load_object,
    message_from_object,
    message_to_disk,
    parse_checkpoint,
    parse_header,
    parse_object,
    prompt_words,
    serialize_checkpoint,
    serialize_entry,
    serialize_header,
    uuid7,
    whole_lines_from,
)
from .ids import IdPermutation, IdWindow
from .index import (
    SLOW_KEY_BASE,
    LogIndex,
    Records,
    Tree,
    cache_covers,
    check_lines,
    load_cache,
    save_cache,
    wants_cache,
)
from .listing import SessionInfo, list_all_sessions, list_sessions, unique_prefixes
from .logmap import LogMap, Passing
from .paths import (
    SESSION_FILE_RE,
    corrupt_path,
    creating_path,
    ensure_private_dir,
    log_files,
    project_dir,
    project_folders,
    session_file_name,
    session_root,
)

CHECKPOINT_MIN_TAIL = 64 * 1024
"""A session writes a checkpoint once this many bytes follow the last one."""

CHECKPOINT_BUDGET = 0.01
"""Checkpoint lines never make up more than this fraction of a log."""

CHECKPOINT_SEARCH = 64 << 10
"""How far back from the end an open looks for the last checkpoint line.

Resume can use a checkpoint only when no tree entry follows it, so it is
almost always the last line or close to it; one further back is found in the
index, which a log with entries after its checkpoint needs anyway."""

CHECKPOINT_SPACING = 200
"""During a session, a checkpoint follows at least this many times its own size of log."""

MAX_REPLACED = RECENT - 1
"""The most messages one appended message may replace (``append_message``'s ``replacing``)."""

# Locations of the branch's last messages kept in memory: the RECENT a
# checkpoint records, and still RECENT after MAX_REPLACED of them leave the
# branch (a checkpoint with fewer would disagree with the log).
_RECENT_KEPT = RECENT + MAX_REPLACED + 1

_PREFIX_RE = re.compile(r"[0-9a-f][0-9a-f-]{0,35}")


def sync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync a folder, so that a name just linked into it or removed is durable."""
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


@functools.cache
def _renameat2() -> Any:
    """libc's ``renameat2`` (Linux, glibc 2.28 or later), or None."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def rename_noreplace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Give ``src`` the name ``dst`` unless ``dst`` exists (then FileExistsError).

    One atomic ``renameat2(RENAME_NOREPLACE)`` where the kernel and file
    system have it, so a crash leaves one name or the other, never both.
    Elsewhere ``link`` then ``unlink``: a crash between the two leaves both
    names, which ``awl reindex`` settles.
    """
    fn = _renameat2()
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), os.fspath(src), None, os.fspath(dst))
        # Anything else (no support, a sandbox refusing the call...): link
        # and unlink give the real error if there is one.
    os.link(src, dst)  # fails if the name exists: never replaces a file
    os.unlink(src)


@dataclass(slots=True)
class OpenStats:
    """How an open became ready (for tests, benchmarks and ``--verbose``)."""

    mode: str = "new"  # "checkpoint", "index" or "new"
    tail_lines: int = 0
    cache: str = "none"  # "none", "loaded", "built", "extended", "rebuilt" (the cache lied)
    cache_saved: bool = False  # this open wrote the index cache file
    trimmed: int = 0  # bytes moved to .corrupt (or, for a reader, ignored)
    checkpoints_written: int = 0
    checkpoint_offset: int | None = None
    parsed: list[int] = field(default_factory=list)  # offsets of lines parsed with orjson


class _StaleIndex(Exception):
    """An index record does not match the log's bytes."""


class SessionManager:
    """An open session: its log, tree and state.

    Make one with :meth:`create`, :meth:`open` or :meth:`continue_recent`.
    A writer holds an exclusive lock on the file until :meth:`close`.
    """

    def __init__(self, path: Path, header: SessionHeader, *, read_only: bool) -> None:
        self._path = path
        self.header = header
        self.read_only = read_only
        self.stats = OpenStats()
        self._fd: int | None = None
        self._mm: LogMap | None = None
        self._size = 0  # bytes of the log that count (a torn tail excluded)
        self._needs_newline = False
        self._pending: list[tuple[bytes, MessageEntry]] = []  # before the file exists
        self._index: LogIndex | None = None
        self._index_dirty = False
        self._checked = 0  # index rows already checked by check_lines
        # The last line's records as the open scanned them, for the full
        # index build that usually follows: (offset, records, log size).
        self._last_line: tuple[int, Records, int] | None = None
        self._appended: dict[str, MessageEntry] = {}
        # Ready state.
        self._leaf: str | None = None
        self._provider = header.provider
        self._model = header.model
        self._message_count = 0
        self._entry_count = 0
        self._line_count = 0
        self._first_prompt = ""
        self._last_activity = header.timestamp
        self._recent: list[tuple[int, int, int, str]] = []
        self._cp_offset: int | None = None
        self._cp_end = 0
        self._cp_bytes = 0
        self._nodes_since_cp = 0
        self._cp_len_guess = 0  # length of the last checkpoint line built
        # The id numbers still free (awl.ids): known from a new session, a
        # checkpoint or the index; None until one of them is at hand.
        self._ids: IdWindow | None = None
        self._broken = False  # a failed write left bytes that could not be removed
        self._closed = False

    # ── creation ──

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        provider: str,
        model: str,
        *,
        session_dir: str | os.PathLike[str] | None = None,
    ) -> SessionManager:
        """A new session for ``cwd``.  Nothing is written until the first user message.

        Raises :class:`SessionError` when ``cwd`` is not valid UTF-8.
        """
        where = os.path.abspath(os.fspath(cwd))
        try:
            where.encode("utf-8")
        except UnicodeEncodeError:
            # The header records the cwd as JSON text, which has no room for
            # undecodable bytes: refuse before anything is written.
            shown = where.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise SessionError(
                f"{shown}: the directory's name is not valid UTF-8, which a session log "
                "cannot record; run awl from a directory with a UTF-8 name"
            ) from None
        t = time.time()
        now = format_timestamp(t)
        sid = uuid7(t)
        header = SessionHeader(
            id=sid,
            timestamp=now,
            cwd=where,
            provider=provider,
            model=model,
        )
        path = project_dir(header.cwd, session_dir) / session_file_name(now, sid)
        self = cls(path, header, read_only=False)
        self._ids = IdWindow(IdPermutation(sid))  # nothing is used yet
        return self

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, read_only: bool = False) -> SessionManager:
        """Open an existing log and become ready.

        A writer takes the lock (:class:`SessionBusy` if another process has
        it), trims a torn last line into ``<file>.corrupt`` and may append a
        checkpoint.  ``read_only`` takes no lock and never writes anything.
        Raises :class:`CorruptSession` for a log it will not guess at.
        """
        p = Path(os.path.abspath(os.fspath(path)))
        flags = os.O_CLOEXEC | (
            os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW
        )
        try:
            fd = open_log(p, flags)
        except FileNotFoundError:
            raise SessionNotFound(f"{p}: no such session file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP and not read_only:
                raise SessionError(symlink_refusal(p)) from None
            if not read_only and exc.errno in _NOT_WRITABLE and _readable(p):
                # Another user's log, a read-only mount: say what still works.
                raise SessionError(
                    f"{p}: cannot open for writing: {exc.strerror} (reading works: awl show)"
                ) from None
            raise SessionError(f"{p}: cannot open: {exc.strerror}") from None
        try:
            if not read_only:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise SessionBusy(p) from None
            header = read_header_fd(fd, p)
            self = cls(p, header, read_only=read_only)
            self._fd = fd
        except BaseException:
            os.close(fd)
            raise
        try:
            self._load()
        except BaseException:
            self._fd = None
            self._mm = None
            os.close(fd)
            raise
        return self

    @classmethod
    def continue_recent(
        cls, cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
    ) -> SessionManager | None:
        """Open the session of ``cwd`` with the latest activity, or None if it has none.

        A log that cannot be read, modified after the best readable one's
        last activity (or when none is readable), may be the most recent
        session: rather than resume an older one, or start anew, without a
        word, this raises SessionError naming it and why.  (Its modification
        time is all there is to go by; the readable one's is not used, since
        reindexing or a checkpoint changes it.)
        """
        infos = cls.list_sessions(cwd, session_dir=session_dir)
        readable = [i for i in infos if i.error is None]
        best = max(readable, key=lambda i: (i.last_activity, i.created, i.path.name), default=None)
        unreadable = [
            i
            for i in infos
            if i.error is not None and (best is None or i.modified > best.last_activity)
        ]
        if unreadable:
            newest = max(unreadable, key=lambda i: (i.modified, i.path.name))
            raise SessionError(
                f"the most recent session here cannot be resumed: {newest.error} "
                "(awl --resume ID resumes another; awl reindex --verify names each problem)"
            )
        return None if best is None else cls.open(best.path)

    @classmethod
    def find(
        cls,
        id_or_prefix: str,
        cwd: str | os.PathLike[str],
        *,
        session_dir: str | os.PathLike[str] | None = None,
    ) -> Path:
        """The log whose session id is or starts with ``id_or_prefix``.

        This cwd's sessions are searched first, then every project's.  Only
        text of an id's characters is accepted, so an argument can never name
        a path.  Raises SessionNotFound (saying which folders could not be
        searched, if any), AmbiguousSession listing the candidates, or
        SessionError when copies of one log match, or this cwd's folder or
        the root cannot be listed.
        """
        prefix = id_or_prefix.strip().lower()
        if not _PREFIX_RE.fullmatch(prefix):
            raise SessionNotFound(f"{id_or_prefix!r} is not a session id or prefix")
        root = Path(session_dir) if session_dir is not None else session_root()
        here = project_dir(cwd, root)
        cwd_text = os.path.abspath(os.fspath(cwd))
        matches = [(sid, p) for sid, p in _session_files(here, cwd_text) if sid.startswith(prefix)]
        unlisted: list[str] = []
        if not matches:
            # Here too, without the cwd filter: another cwd's folder name can
            # be the same (encode_cwd maps "/a-b/c" and "/a/b-c" alike).
            for folder in project_folders(root):
                try:
                    found = list(_session_files(folder, None))
                except SessionError as exc:  # one bad folder does not hide the others
                    unlisted.append(str(exc))
                    continue
                matches.extend((sid, p) for sid, p in found if sid.startswith(prefix))
        exact = [m for m in matches if m[0] == prefix]
        if exact:
            matches = exact
        if not matches:
            why = f" ({len(unlisted)} not searched: {unlisted[0]})" if unlisted else ""
            raise SessionNotFound(f"no session matches {id_or_prefix!r}{why}")
        if len({sid for sid, _ in matches}) > 1:
            raise AmbiguousSession(prefix, sorted(sid for sid, _ in matches))
        if len(matches) > 1:  # copies of one log: which one to write is not ours to guess
            files = ", ".join(str(p) for _, p in matches)
            raise SessionError(f"session {matches[0][0]} is in {len(matches)} files: {files}")
        return matches[0][1]

    @classmethod
    def list_sessions(
        cls, cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
    ) -> list[SessionInfo]:
        """The sessions whose header cwd is ``cwd``, oldest first.

        Each is read only as far as its header and last checkpoint (see
        :mod:`awl.listing`); one that cannot be read is listed with its ``error``.
        """
        return list_sessions(cwd, session_dir=session_dir)

    @classmethod
    def list_all_sessions(
        cls, *, session_dir: str | os.PathLike[str] | None = None
    ) -> dict[str, list[SessionInfo]]:
        """Every project's sessions, grouped by header cwd (sorted), oldest first in each."""
        return list_all_sessions(session_dir=session_dir)

    # ── properties ──

    @property
    def path(self) -> Path:
        """The log's path (it may not exist yet for a new session)."""
        return self._path

    @property
    def id(self) -> str:
        """The session id."""
        return self.header.id

    @property
    def cwd(self) -> str:
        """The working directory the session belongs to."""
        return self.header.cwd

    @property
    def leaf_id(self) -> str | None:
        """The id of the current leaf (the last tree entry), or None."""
        return self._leaf

    @property
    def message_count(self) -> int:
        """Message entries on the branch from the root to the leaf."""
        return self._message_count

    @property
    def entry_count(self) -> int:
        """Tree entries in the log."""
        return self._entry_count

    @property
    def first_prompt(self) -> str:
        """The opening words of the first user prompt on the branch."""
        return self._first_prompt

    @property
    def last_activity(self) -> str:
        """The timestamp of the leaf entry (the header's when there is none)."""
        return self._last_activity

    @property
    def size(self) -> int:
        """Bytes of the log that count."""
        return self._size

    def active_model(self) -> tuple[str, str]:
        """(provider, model) of the last user message on the branch, else the header's."""
        return self._provider, self._model

    # ── loading ──

    def _map(self) -> LogMap:
        """The log's bytes up to the current size (re-mapped after our own appends)."""
        if self._mm is None or len(self._mm) < self._size:
            assert self._fd is not None
            if self.read_only:
                # Every line but the last is mapped: see awl.logmap.
                self._mm = LogMap.for_reader(self._fd, self._size)
            else:
                # mmap keeps a dup of the descriptor it maps, and a dup shares
                # the flock: map through a descriptor of its own so that the
                # lock ends with close() whatever happens to the mapping.
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                rfd = os.open(self._path, flags)
                try:
                    a, b = os.fstat(rfd), os.fstat(self._fd)
                    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                        raise SessionError(f"{self._path}: the file was replaced while open")
                    self._mm = LogMap.whole(rfd, self._size)
                finally:
                    os.close(rfd)
        return self._mm

    def _load(self) -> None:
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        self._size = size
        mm = self._map()
        self._size = size = min(size, len(mm))  # a reader may find the file shorter already
        nl = mm.find(b"\n")
        body = nl + 1 if nl >= 0 else size
        torn: int | None = None
        if nl < 0:
            self._needs_newline = True
        else:
            end = size - 1 if mm.byte(size - 1) == 0x0A else size
            last = mm.rfind(b"\n", 0, end) + 1
            if last >= body:
                rec = mm.scan(last, size)
                if int(rec["kind"][0]) == scanner.KIND_INVALID:
                    torn = last
                else:
                    self._last_line = (last, rec, size)
                    if end == size:
                        self._needs_newline = True
        if torn is not None:
            # Everything below reads only up to the torn line; it is moved out
            # of the file only once the rest has been found sound.
            self.stats.trimmed = size - torn
            self._size = size = torn

        # Only the end of the log is searched for a checkpoint: one further
        # back is found in the index, which then has to be built anyway.
        cp = None
        start = body
        if size - CHECKPOINT_SEARCH > body:
            nl_before = mm.find(b"\n", size - CHECKPOINT_SEARCH - 1, size)
            start = nl_before + 1 if nl_before >= 0 else size
        # A plain byte search first: most logs without a checkpoint near the
        # end are ruled out at memory speed (an escaped type that this misses
        # is still found through the index below).
        off = None
        if self._last_line is not None and int(self._last_line[1]["kind"][0]) == (
            scanner.KIND_CHECKPOINT
        ):
            off = self._last_line[0]  # where a clean close leaves it: already scanned
        elif start < size and mm.find(b'"checkpoint"', start, size) >= 0:
            off = mm.find_last("checkpoint", start, size)
        if off is not None:
            cp = self._check_checkpoint(mm, off, body, size)
        tail_nodes = 1
        if cp is not None:
            checkpoint, cp_len = cp
            tail_start = checkpoint.offset + cp_len + 1
            first_line = checkpoint.line + 1
            tail = mm.scan(tail_start, size) if tail_start < size else None
            if tail is not None:
                check_lines(tail, self._path, first_line)
                self.stats.tail_lines = len(tail)
                kinds = tail["kind"]
                is_node = (kinds == scanner.KIND_MESSAGE) | (kinds == scanner.KIND_OTHER)
                tail_nodes = int(
                    np.count_nonzero(is_node & ((tail["flags"] & scanner.FLAG_ID) != 0))
                )
            else:
                tail_nodes = 0
        if cp is not None and tail_nodes == 0:
            checkpoint, cp_len = cp
            self.stats.mode = "checkpoint"
            self._take_checkpoint(checkpoint, cp_len)
            self._line_count = first_line + (len(tail) if tail is not None else 0)
        else:
            self.stats.mode = "index"
            self._state_trusting_no_cache(cp, body)
        if not self.read_only:
            if torn is not None:
                self._trim(torn, self.stats.trimmed)
            self._after_writer_open()

    _DERIVED = (
        "_line_count",
        "_entry_count",
        "_cp_offset",
        "_cp_end",
        "_cp_bytes",
        "_nodes_since_cp",
        "_leaf",
        "_message_count",
        "_recent",
        "_provider",
        "_model",
        "_first_prompt",
        "_last_activity",
        "_ids",
    )

    def _derived(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._DERIVED}

    def _set_derived(self, saved: dict[str, Any]) -> None:
        for name, value in saved.items():
            setattr(self, name, value)

    def _state_trusting_no_cache(self, cp: tuple[Checkpoint, int] | None, body: int) -> None:
        """The state from the whole index; one from a cache file that does not fit
        the log is dropped, and the log scanned afresh (:meth:`_with_fresh_index`)."""
        saved = self._derived()

        def derive() -> None:
            self._set_derived(saved)  # a try on a lying cache may have set some
            found = cp
            if found is None:
                index, _ = self._ensure_index()
                rows = np.flatnonzero(index.records["kind"] == scanner.KIND_CHECKPOINT)
                if len(rows):
                    off = int(index.records["offset"][rows[-1]])
                    found = self._check_checkpoint(self._map(), off, body, self._size)
            self._state_from_index(found)

        self._with_fresh_index(derive)

    def checkpoint_disagreement(self) -> tuple[int, str] | None:
        """For verification: (line, how) the checkpoint this open trusted differs from
        the log, or None.

        Everything the open took from it (the leaf, the message count, the
        first prompt, the recent messages' locations, the active model, the
        entry count, the last activity) is derived again from the whole log.
        A checkpoint that lies consistently passes every check an open makes,
        and a writer would carry the lie into the next one.
        """
        if self._cp_offset is None or self._fd is None:
            return None
        names = (
            "leaf",
            "message count",
            "first prompt",
            "recent messages at",
            "active model",
            "entry count",
            "last activity",
        )

        def believed() -> tuple[Any, ...]:
            return (
                self._leaf,
                self._message_count,
                self._first_prompt,
                [(o, n) for o, n, _, _ in self._recent[-RECENT:]],
                (self._provider, self._model),
                self._entry_count,
                self._last_activity,
            )

        claimed = believed()
        window = self._ids.bounds() if self._ids is not None else None
        saved = self._derived()
        try:
            # Fresh: a cache file is what verification must not trust.
            index, tree = self._ensure_index(fresh=True)
            # What the derivation below sets only when the log has it.
            self._first_prompt = ""
            self._provider, self._model = self.header.provider, self.header.model
            self._last_activity = self.header.timestamp
            self._state_from_index(None)
            actual = believed()
            row = int(np.searchsorted(index.records["offset"], saved["_cp_offset"]))
        finally:
            self._set_derived(saved)
        diffs = [
            f"{name} {c!r}, the log {a!r}"
            for name, c, a in zip(names, claimed, actual, strict=True)
            if c != a
        ]
        if window is not None:
            # Every id, those after the checkpoint included: the open moved the
            # window past the ones it found there.
            keys = tree.keys[tree.keys < SLOW_KEY_BASE]
            numbers = IdPermutation(self.header.id).numbers_of(keys)
            used = int(np.count_nonzero((numbers >= window[0]) & (numbers < window[1])))
            if used:
                diffs.append(f"ids {list(window)} are free, the log uses {used} of them")
        if not diffs:
            return None
        return row + 1, "the checkpoint says " + "; ".join(diffs) + " (a writer would copy it)"

    def _check_checkpoint(
        self, mm: LogMap, off: int, body: int, size: int
    ) -> tuple[Checkpoint, int] | None:
        """The checkpoint line at ``off`` if it is consistent with the file, else None."""
        end = mm.find(b"\n", off, size)
        if end < 0:
            end = size
        self.stats.parsed.append(off)
        try:
            cp = parse_checkpoint(load_object(mm.view(off, end)))
        except FormatError:
            return None
        if not checkpoint_fits(cp, off, body, self.header):
            return None
        if not checkpoint_locates(cp, mm, body):
            return None
        self.stats.checkpoint_offset = off
        return cp, end - off

    def _take_checkpoint(self, cp: Checkpoint, cp_len: int) -> None:
        self._leaf = cp.leaf_id
        self._provider, self._model = cp.provider, cp.model
        self._message_count = cp.message_count
        self._entry_count = cp.entry_count
        self._first_prompt = cp.first_prompt
        self._last_activity = cp.last_activity
        assert self._mm is not None
        self._recent = whole_lines_from(list(cp.recent), self._mm)
        self._cp_offset = cp.offset
        self._cp_end = cp.offset + cp_len + 1
        self._cp_bytes = cp.checkpoint_bytes + cp_len + 1
        if cp.free_ids is not None:
            self._ids = IdWindow(IdPermutation(self.header.id), *cp.free_ids)

    def _state_from_index(self, cp: tuple[Checkpoint, int] | None) -> None:
        index, tree = self._ensure_index()
        self._line_count = len(index)
        self._entry_count = len(tree)
        rec = index.records
        kinds = rec["kind"]
        if cp is not None:
            checkpoint, cp_len = cp
            self._cp_offset = checkpoint.offset
            self._cp_end = checkpoint.offset + cp_len + 1
            self._cp_bytes = checkpoint.checkpoint_bytes + cp_len + 1
        else:
            # Checkpoints that were not usable still count against the budget.
            cps = np.flatnonzero(kinds == scanner.KIND_CHECKPOINT)
            if len(cps):
                self._cp_bytes = int(rec["length"][cps].sum()) + len(cps)
        if not len(tree):
            self._nodes_since_cp = 0
            return
        leaf_pos = len(tree) - 1
        self._leaf = tree.id_at(leaf_pos)
        branch_rows = tree.rows[tree.branch(leaf_pos)]
        msg_rows = branch_rows[kinds[branch_rows] == scanner.KIND_MESSAGE]
        self._message_count = len(msg_rows)
        self._recent = self._locs(index, tree, msg_rows[-RECENT:])
        cp_row = -1
        if cp is not None and cp[0].leaf_id is not None:
            pos = tree.pos_of(cp[0].leaf_id)
            if pos is not None:
                cp_row = int(tree.rows[pos])
        self._nodes_since_cp = (
            int(np.count_nonzero(rec["offset"][tree.rows] > cp[0].offset))
            if cp is not None
            else len(tree)
        )
        if cp is not None and cp[0].free_ids is not None:
            # The checkpoint's window, less the ids of the entries after it.
            self._ids = IdWindow(IdPermutation(self.header.id), *cp[0].free_ids)
            after = tree.keys[rec["offset"][tree.rows] > cp[0].offset]
            self._ids.skip(after[after < SLOW_KEY_BASE].tolist())
        on_branch_cp = cp is not None and cp_row >= 0 and bool(np.any(branch_rows == cp_row))
        # Active model: the last user message on the branch, else the
        # checkpoint's, else the header's.
        found = False
        users = msg_rows[rec["role"][msg_rows] == scanner.ROLE_USER]
        behind: Passing | None = None
        for k, r in enumerate(users[::-1]):
            row = int(r)
            if on_branch_cp and row < cp_row:
                break
            if k:  # a long walk holds a window of the log, not all it has read
                off = int(rec["offset"][row])
                behind = behind or self._map().passing(off)
                behind.at(off)
            # The scanner reads the two fields; the entry (often a large
            # tool result) is not decoded.
            _, provider, model = self._fields_at_row(index, row)
            if provider and model:
                self._provider, self._model = provider, model
                found = True
                break
        if not found and on_branch_cp and cp is not None:
            self._provider, self._model = cp[0].provider, cp[0].model
        if on_branch_cp and cp is not None:
            self._first_prompt = cp[0].first_prompt
        if not self._first_prompt:
            for r in users:
                self._first_prompt = self._prompt_at_row(index, int(r))
                if self._first_prompt:
                    break
        leaf_row = int(tree.rows[leaf_pos])
        stamp = self._fields_at_row(index, leaf_row)[0]
        if stamp is None:  # absent or not a string: the parse says which is wrong
            leaf_entry = self._entry_at_row(index, leaf_row)
            if isinstance(leaf_entry, MessageEntry | UnknownEntry) and leaf_entry.base is not None:
                stamp = leaf_entry.base.timestamp
        if stamp is not None:
            self._last_activity = stamp or self.header.timestamp

    def _prompt_at_row(self, index: LogIndex, row: int) -> str:
        """:func:`prompt_words` of the indexed user message at ``row``."""
        offset = int(index.records["offset"][row])
        length = int(index.records["length"][row])
        try:
            obj = orjson.loads(self._map().view(offset, offset + length))
        except orjson.JSONDecodeError:
            obj = None
        # Straight to the Conversation message, as a rebuild does; the slow
        # path gives the exact error for anything off.
        fast = message_from_object(obj) if type(obj) is dict else None
        if fast is not None:
            self.stats.parsed.append(offset)
            return first_words(fast.text())
        entry = self._entry_at_row(index, row)
        return prompt_words(entry.message) if isinstance(entry, MessageEntry) else ""

    def _fields_at_row(self, index: LogIndex, row: int) -> scanner.EntryFields:
        """(timestamp, provider, model) of an indexed line, without parsing its content."""
        offset = int(index.records["offset"][row])
        length = int(index.records["length"][row])
        # Trusted when this process scanned the line: it is valid, so the
        # scanner need only find the fields, not check every string again.
        # A cache file's records get the full check.
        fields = scanner.entry_fields(
            self._map().view(offset, offset + length), trusted=not index.from_cache
        )
        if fields is None:  # the index said valid: a cache that lied, or the log changed
            raise CorruptSession(self._path, row + 1, "not a complete JSON object")
        return fields

    def _locs(
        self, index: LogIndex, tree: Tree, rows: npt.NDArray[np.int64]
    ) -> list[tuple[int, int, int, str]]:
        """(offset, length, line, id) of the tree nodes at index rows ``rows``."""
        # Field by field: a gather of whole structured records is slow in numpy.
        rec = index.records
        pos = np.searchsorted(tree.rows, rows)
        return [
            (o, n, r, tree.id_at(p))
            for o, n, r, p in zip(
                rec["offset"][rows].tolist(),
                rec["length"][rows].tolist(),
                rows.tolist(),
                pos.tolist(),
                strict=True,
            )
        ]

    def _loc(self, index: LogIndex, tree: Tree, row: int) -> tuple[int, int, int, str]:
        return self._locs(index, tree, np.array([row], dtype=np.int64))[0]

    def _ensure_index(self, *, fresh: bool = False, current: bool = True) -> tuple[LogIndex, Tree]:
        """The index covering the whole log, from the cache where it matches.

        With ``current=False`` an index already built is returned as it is,
        even if this process has appended since (the id check on append
        needs only what was on disk before, plus its own ids).
        """
        if self._fd is None:
            raise SessionError("the session has no log on disk yet")
        if not current and not fresh and self._index is not None:
            return self._index, self._index.tree(self._mm or self._map(), self._path)
        mm = self._map()
        if fresh:
            self._index = None
            self._checked = 0
        if self._index is None:
            cached = None
            if not fresh:
                cached = load_cache(mm, os.fstat(self._fd), self._size, self._path)
            if cached is not None:
                self._index = cached
                self.stats.cache = "loaded"
                if cached.size < self._size:
                    cached.extend(mm, self._size)
                    self._index_dirty = True
                    self.stats.cache = "extended"
            else:
                known = None
                if self._last_line is not None and self._last_line[2] == self._size:
                    known = self._last_line[:2]
                self._index = LogIndex.build(mm, self._size, known)
                self._index_dirty = True
                self.stats.cache = "built"
            self._last_line = None
        elif self._index.size < self._size:
            # A line that lacked its newline is rescanned by extend().
            self._checked = min(self._checked, max(len(self._index) - 1, 0))
            self._index.extend(mm, self._size)
            self._index_dirty = True
        index = self._index
        if self._checked < len(index):
            check_lines(index.records[self._checked :], self._path, self._checked)
            self._checked = len(index)
        tree = index.tree(mm, self._path)
        if self._leaf is not None and self._leaf not in self._appended and self._leaf not in tree:
            # The checkpoint named a leaf the log does not have: the log is
            # the truth, so the state is derived again from the index.
            self._leaf = None
            self._recent = []
            self._first_prompt = ""
            self._provider, self._model = self.header.provider, self.header.model
            self._cp_offset, self._cp_end, self._cp_bytes = None, 0, 0
            self._ids = None  # the checkpoint's window is no more believed than its leaf
            self.stats.mode = "index"
            self._state_from_index(None)
        return index, tree

    def _trim(self, start: int, torn: int) -> None:
        """Move a torn last line's bytes to ``<file>.corrupt``, then cut them off."""
        assert self._fd is not None and self._mm is not None
        data = bytes(self._mm.view(start, start + torn))
        self._mm = None  # the mapping would reach past the new end of file
        target = corrupt_path(self._path)
        try:
            keep_bytes(target, data, source=self._fd)
        except OSError as exc:
            # The log is not touched unless its torn bytes are safe elsewhere.
            raise SessionWriteError(cannot_keep(target, exc)) from None
        try:
            os.ftruncate(self._fd, start)
            if fsync_enabled():
                os.fsync(self._fd)
        except OSError as exc:
            raise SessionWriteError(
                f"{self._path}: cannot trim the torn last line ({exc.strerror}); "
                f"its bytes are also in {target}"
            ) from None

    def _after_writer_open(self) -> None:
        # A log without a recent checkpoint (an older awl's, another tool's,
        # or one cut short by a crash) gets one now, so the next open is fast.
        self._maybe_checkpoint(closing=True)  # the rules of needs_checkpoint()
        if self._index is not None and self._index_dirty:
            self._save_index()

    # ── parsing entries ──

    def _parse_at(self, offset: int, length: int, line: int) -> FileEntry:
        mm = self._map()
        self.stats.parsed.append(offset)
        try:
            return parse_object(load_object(mm.view(offset, offset + length)))
        except FormatError as exc:
            raise CorruptSession(self._path, line + 1, str(exc)) from None

    def _entry_at_row(self, index: LogIndex, row: int) -> FileEntry:
        rec = index.records
        return self._parse_at(int(rec["offset"][row]), int(rec["length"][row]), row)

    def _entry_checked(self, offset: int, length: int, line: int, entry_id: str) -> SessionEntry:
        entry = self._parse_at(offset, length, line)
        if isinstance(entry, SessionHeader | Checkpoint) or entry.base is None:
            raise _StaleIndex
        if entry.base.id != entry_id:
            raise _StaleIndex
        return entry

    def _with_fresh_index(self, fn: Any) -> Any:
        # A record that does not match the log means the cache lied: rescan
        # once.  While a cache file's index is in use, any problem found is
        # taken for such a lie; the fresh scan then says what is real.
        try:
            return fn()
        except _StaleIndex:
            pass
        except CorruptSession:
            if self._index is None or not self._index.from_cache:
                raise
        self._ensure_index(fresh=True)
        self.stats.cache = "rebuilt"
        try:
            return fn()
        except _StaleIndex:
            raise CorruptSession(
                self._path, None, "an entry does not match the index (was the file changed?)"
            ) from None

    # ── tree traversal ──

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        """The tree entry with this id, or None."""
        if entry_id in self._appended:
            return self._appended[entry_id]
        if self._fd is None:
            return None

        def look() -> SessionEntry | None:
            index, tree = self._ensure_index()
            pos = tree.pos_of(entry_id)
            if pos is None:
                return None
            o, n, row, eid = self._loc(index, tree, int(tree.rows[pos]))
            return self._entry_checked(o, n, row, eid)

        result: SessionEntry | None = self._with_fresh_index(look)
        return result

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), root first."""
        start = from_id if from_id is not None else self._leaf
        if start is None:
            return []
        if self._fd is None:
            entries = [e for _, e in self._pending]
            ids = [e.base.id for e in entries]
            if start not in ids:
                raise KeyError(start)
            return list(entries[: ids.index(start) + 1])

        def walk() -> list[SessionEntry]:
            index, tree = self._ensure_index()
            # The index may have shown that the checkpoint named a leaf the
            # log does not have: the leaf is then the one derived from the log.
            start = from_id if from_id is not None else self._leaf
            if start is None:
                return []
            pos = tree.pos_of(start)
            if pos is None:
                raise KeyError(start)
            out: list[SessionEntry] = []
            for p in tree.branch(pos):
                eid = tree.id_at(int(p))
                if eid in self._appended:
                    out.append(self._appended[eid])
                    continue
                o, n, row, _ = self._loc(index, tree, int(tree.rows[int(p)]))
                out.append(self._entry_checked(o, n, row, eid))
            return out

        branch: list[SessionEntry] = self._with_fresh_index(walk)
        return branch

    def _branch_message_locs(self) -> list[tuple[int, int, int, str]]:
        index, tree = self._ensure_index()
        if self._leaf is None:
            return []
        pos = tree.pos_of(self._leaf)
        if pos is None:
            raise _StaleIndex
        branch = tree.branch(pos)
        rows = tree.rows[branch]
        rec = index.records
        is_msg = rec["kind"][rows] == scanner.KIND_MESSAGE
        msg_rows, msg_pos = rows[is_msg], branch[is_msg]
        # Whole columns at once: per-row scalar indexing of a memory-mapped
        # cache costs more than parsing the messages.
        offsets = rec["offset"][msg_rows].tolist()
        lengths = rec["length"][msg_rows].tolist()
        keys = tree.keys[msg_pos].tolist()
        ids = [tree.slow_names[k] if k >= SLOW_KEY_BASE else f"{k:08x}" for k in keys]
        return list(zip(offsets, lengths, msg_rows.tolist(), ids, strict=True))

    # ── rebuilding ──

    def rebuild_conversation(self) -> Conversation:
        """The Conversation of the branch, materialized lazily.

        Messages are parsed from the mapped log on first access; the last few
        are found through the checkpoint, the rest through the index.
        """
        if self._fd is None:
            return Conversation(disk_message_to_internal(e.message) for _, e in self._pending)
        count = self._message_count
        recent = list(self._recent)
        locs: list[tuple[int, int, int, str]] | None = None

        behind: Passing | None = None

        def message(loc: tuple[int, int, int, str]) -> Message:
            nonlocal behind
            o, n, line, eid = loc
            if eid in self._appended:
                return disk_message_to_internal(self._appended[eid].message)
            self.stats.parsed.append(o)
            mm = self._map()
            if behind is None or behind.log is not mm:
                behind = mm.passing(o)
            behind.at(o)  # a pass over the branch (awl show) holds a window, not the log
            try:
                obj = orjson.loads(mm.view(o, o + n))
            except orjson.JSONDecodeError:
                obj = None
            if type(obj) is dict and obj.get("id") == eid:
                fast = message_from_object(obj)
                if fast is not None:
                    return fast
            # The slow path gives the exact error, or finds the index stale.
            entry = self._entry_checked(o, n, line, eid)
            if not isinstance(entry, MessageEntry):
                raise _StaleIndex
            return disk_message_to_internal(entry.message)

        def via_index(i: int) -> Message:
            nonlocal locs
            if locs is None:
                locs = self._branch_message_locs()
            if len(locs) < count:
                raise _StaleIndex
            return message(locs[i])

        def load(i: int) -> Message:
            nonlocal locs
            k = i - (count - len(recent))
            if k >= 0:
                # A located line that is not that entry is the checkpoint's
                # error, not the log's: the index says what is there.
                with contextlib.suppress(_StaleIndex, CorruptSession):
                    return message(recent[k])

            def again() -> Message:
                nonlocal locs
                locs = None  # locations taken from a stale index are stale too
                return via_index(i)

            try:
                return via_index(i)
            except _StaleIndex:
                result: Message = self._with_fresh_index(again)
                return result

        return Conversation(lazy_count=count, loader=load)

    def recent_entries(self, n: int = RECENT) -> list[MessageEntry]:
        """The last ``n`` message entries of the branch (through the checkpoint when it can)."""
        if self._fd is None:
            return [e for _, e in self._pending][-n:]
        if n <= 0:
            return []
        if n > len(self._recent) and len(self._recent) < self._message_count:
            return [e for e in self.get_branch() if isinstance(e, MessageEntry)][-n:]
        out: list[MessageEntry] = []
        for loc in self._recent[-n:]:
            try:
                entry = self._located(loc)
            except (_StaleIndex, CorruptSession):
                # Not the entry the checkpoint located: read the branch instead,
                # which reports the log's own corruption, if that is what it is.
                return [e for e in self.get_branch() if isinstance(e, MessageEntry)][-n:]
            if isinstance(entry, MessageEntry):
                out.append(entry)
        return out

    def _located(self, loc: tuple[int, int, int, str]) -> SessionEntry:
        offset, length, line, eid = loc
        if eid in self._appended:
            return self._appended[eid]
        return self._entry_checked(offset, length, line, eid)

    # ── appending ──

    def append_message(
        self,
        message: Message | DiskMessage,
        *,
        provider: str | None = None,
        model: str | None = None,
        stop_reason: str | None = None,
        usage: Usage | None = None,
        replacing: int = 0,
    ) -> str:
        """Append a message as a child of the leaf; returns the new entry id.

        A user message is stamped with ``provider``/``model`` (default: the
        active model), which become the active model.  For an assistant
        :class:`Message` they, ``stop_reason`` and ``usage`` go into the
        entry's message metadata.  The entry is on disk (fsync'd unless
        ``AWL_FSYNC=0``) when this returns; on failure nothing of it is.

        ``replacing`` (up to :data:`MAX_REPLACED`) makes a user message
        take the place of the last messages of the branch, user messages
        holding only tool results that this manager appended (a tool
        round's results saved as each call ended, see :mod:`awl.agent`):
        its parent is the message before them, they leave the branch and
        stay in the log.
        """
        self._check_writable()
        parent = self._leaf
        if replacing:
            parent = self._replaced_parent(replacing, message.role)
        if isinstance(message, Message):
            disk = message_to_disk(
                message, provider=provider, model=model, stop_reason=stop_reason, usage=usage
            )
        else:
            disk = message
        stamp_provider = stamp_model = None
        if disk.role == "user":
            stamp_provider = provider or self._provider
            stamp_model = model or self._model
        entry = MessageEntry(
            base=EntryBase(self._draw_id(), parent, format_timestamp()),
            message=disk,
            provider=stamp_provider,
            model=stamp_model,
        )
        line = serialize_entry(entry)
        if self._fd is None and disk.role != "user":
            # Nothing touches the disk before the first user message.
            self._pending.append((line, entry))
            self._note(entry)
        elif self._fd is None:
            self._create_file(line, entry)
        else:
            offset = self._write(line)
            if replacing:
                self._message_count -= replacing
                del self._recent[-replacing:]
            self._note(entry)
            self._place(entry.base.id, offset, len(line) - 1)
        if self._fd is not None:
            # The entry is saved; a checkpoint is an optimization, and one
            # that fails to write (disk full) must not fail the append.
            with contextlib.suppress(SessionWriteError):
                self._maybe_checkpoint(closing=False)
        return entry.base.id

    def _replaced_parent(self, replacing: int, role: str) -> str:
        """The parent of a message replacing the last ``replacing`` of the branch
        (see :meth:`append_message`); ValueError when they may not be replaced."""
        kept = len(self._recent) - replacing  # the parent and the messages before it
        wanted = max(1, min(RECENT, self._message_count - replacing))
        if not 0 < replacing <= MAX_REPLACED or kept < wanted:
            raise ValueError(f"cannot replace {replacing} messages of the branch")
        if self._fd is None or role != "user":
            raise ValueError("only a user message of a saved session replaces tool results")
        for _o, _n, _line, eid in self._recent[-replacing:]:
            entry = self._appended.get(eid)
            if entry is None or entry.message.role != "user" or not entry.message.content:
                raise ValueError(f"{eid} is not a tool-results message appended by this session")
            if not all(isinstance(b, DiskToolResult) for b in entry.message.content):
                raise ValueError(f"{eid} holds more than tool results")
        return self._recent[-replacing - 1][3]

    def _draw_id(self) -> str:
        """A fresh entry id: from the free window, found from the index only when
        no checkpoint recorded it (a log of an older awl or another tool) or it
        is used up, both once in a long while."""
        if self._ids is None or not len(self._ids):
            self._ids = self._window_from_index()
        return self._ids.draw()

    def _window_from_index(self) -> IdWindow:
        _, tree = self._ensure_index()
        keys = tree.keys[tree.keys < SLOW_KEY_BASE]  # only hex ids can equal a drawn one
        return IdWindow.around(IdPermutation(self.header.id), keys)

    def _check_writable(self) -> None:
        if self._closed:
            raise SessionError(f"{self._path}: session is closed")
        if self.read_only:
            raise SessionError(f"{self._path}: session is open read-only")
        if self._broken:
            raise SessionWriteError(
                f"{self._path}: a failed write could not be undone; "
                "reopen the session (the torn line is trimmed then)"
            )

    def _note(self, entry: MessageEntry) -> None:
        """Update the ready state for an appended entry."""
        eid = entry.base.id
        self._appended[eid] = entry
        self._leaf = eid
        self._entry_count += 1
        self._message_count += 1
        self._nodes_since_cp += 1
        self._last_activity = entry.base.timestamp
        if entry.message.role == "user":
            assert entry.provider is not None and entry.model is not None
            self._provider, self._model = entry.provider, entry.model
            if not self._first_prompt:
                self._first_prompt = prompt_words(entry.message)

    def _place(self, eid: str, offset: int, length: int) -> None:
        """Record where an appended message's line is (it is the next line of the file)."""
        self._recent.append((offset, length, self._line_count, eid))
        del self._recent[:-_RECENT_KEPT]
        self._line_count += 1

    def _create_file(self, line: bytes, entry: MessageEntry) -> None:
        # The first lines are written under a temporary name and renamed into
        # place complete, so a crash can leave no empty or torn log behind
        # (only, at worst, a hidden temporary file, which no listing reads).
        # Serialized first: a header that cannot be written leaves no file.
        head = serialize_header(self.header)
        try:
            ensure_private_dir(self._path.parent)
        except OSError as exc:
            raise SessionWriteError(
                f"{exc.filename or self._path.parent}: cannot create the session folder: "
                f"{exc.strerror}"
            ) from None
        tmp = creating_path(self._path, os.getpid())
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o600)
        except OSError as exc:
            raise SessionWriteError(
                f"{self._path}: cannot create session file: {exc.strerror}"
            ) from None
        try:
            os.fchmod(fd, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            chunks = [head] + [ln for ln, _ in self._pending] + [line]
            _write_all(fd, b"".join(chunks))
            if fsync_enabled():
                os.fsync(fd)
            rename_noreplace(tmp, self._path)  # never replaces a log
            if fsync_enabled():
                sync_dir(self._path.parent)
        except BaseException as exc:
            # Also on KeyboardInterrupt: no locked, half-made file outlives
            # the attempt in this process.
            try:
                st = os.stat(self._path, follow_symlinks=False)
                placed = os.path.samestat(st, os.fstat(fd))
            except OSError:
                placed = False
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if placed:  # not durable: the session is not claimed to exist
                with contextlib.suppress(OSError):
                    os.unlink(self._path)
            if isinstance(exc, OSError):
                raise SessionWriteError(
                    f"{self._path}: could not write session: {exc.strerror}"
                ) from None
            raise
        self._fd = fd
        self._note(entry)
        offset = len(head)
        self._line_count = 1
        for ln, pending in [*self._pending, (line, entry)]:
            self._place(pending.base.id, offset, len(ln) - 1)
            offset += len(ln)
        self._pending.clear()
        self._size = offset
        self.stats.mode = "new"

    def _write(self, line: bytes) -> int:
        """Append one line with one write (looping on short writes); returns its offset."""
        assert self._fd is not None
        data = b"\n" + line if self._needs_newline else line
        start = self._size
        try:
            _write_all(self._fd, data)
            if fsync_enabled():
                os.fsync(self._fd)
        except OSError as exc:
            # Leave no part of the entry behind.  If even that fails, the torn
            # bytes stay last in the file, where the next open trims them: this
            # session must not append after them, so it refuses to go on.
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                self._broken = True
            raise SessionWriteError(
                f"{self._path}: could not append entry: {exc.strerror}"
            ) from None
        self._needs_newline = False
        self._size = start + len(data)
        return self._size - len(line)

    # ── checkpoints ──

    def checkpoint(self) -> bool:
        """Write a checkpoint now if there are entries since the last one and the budget allows."""
        self._check_writable()
        return self._maybe_checkpoint(closing=True)

    def _checkpoint_line(self, *, closing: bool) -> bytes | None:
        """The checkpoint to write now, or None when the rules say not to."""
        if self._fd is None or not self._entry_count:
            return None
        if not self._nodes_since_cp and self._cp_offset is not None:
            return None
        tail = self._size - self._cp_end
        if not closing and tail < max(CHECKPOINT_MIN_TAIL, CHECKPOINT_SPACING * self._cp_len_guess):
            return None
        cp = Checkpoint(
            timestamp=format_timestamp(),
            offset=self._size + (1 if self._needs_newline else 0),
            line=self._line_count,
            session_id=self.header.id,
            created=self.header.timestamp,
            leaf_id=self._leaf,
            provider=self._provider,
            model=self._model,
            message_count=self._message_count,
            entry_count=self._entry_count,
            last_activity=self._last_activity,
            first_prompt=self._first_prompt,
            recent=self._recent[-RECENT:],
            checkpoint_bytes=self._cp_bytes,
            prev=self._cp_offset,
            free_ids=self._free_ids(),
        )
        line = serialize_checkpoint(cp)
        self._cp_len_guess = len(line)
        # Periodic checkpoints use at most half the budget, so the one written
        # at close still fits.
        if not closing and tail < CHECKPOINT_SPACING * len(line):
            return None
        if self._cp_bytes + len(line) > CHECKPOINT_BUDGET * (self._size + len(line)):
            return None
        return line

    def _free_ids(self) -> tuple[int, int] | None:
        """The window a checkpoint records: the one in use, else one found from an
        index already in memory (a log opened through its index); None otherwise."""
        if self._ids is None and self._index is not None:
            self._ids = self._window_from_index()
        return None if self._ids is None else self._ids.bounds()

    def _maybe_checkpoint(self, *, closing: bool) -> bool:
        if self.read_only or self._broken:
            return False
        line = self._checkpoint_line(closing=closing)
        if line is None:
            return False
        offset = self._write(line)
        self._line_count += 1
        self._cp_offset = offset
        self._cp_end = self._size
        self._cp_bytes += len(line)
        self._nodes_since_cp = 0
        self.stats.checkpoints_written += 1
        return True

    def build_index(self) -> bool:
        """Make the index cache match the whole log (a writer's job; a reader only indexes).

        Returns True when the cache file was (re)written.
        """
        if self.read_only or self._fd is None:
            self._ensure_index()
            return False
        return self._refresh_cache(trust_header=False)

    def _refresh_cache(self, *, trust_header: bool) -> bool:
        # Saving needs the records, not the tree: a cache that already covers
        # the log is left alone, one that covers a prefix is extended.  With
        # trust_header (a close), a cache whose header fits the whole log is
        # taken as current without reading its records: checking their CRC
        # cost every close of a large log 2 ms per 64,000 lines.  Rebuilding
        # on request (reindex) checks them, and so rewrites a damaged cache.
        assert self._fd is not None
        if not wants_cache(self._size):
            self._index_dirty = False  # nothing to save: do not index just for that
            return False
        mm = self._map()
        if (
            self._index is None
            and trust_header
            and cache_covers(mm, os.fstat(self._fd), self._size, self._path)
        ):
            return False
        if self._index is None:
            cached = load_cache(mm, os.fstat(self._fd), self._size, self._path)
            if cached is not None and cached.size == self._size:
                self.stats.cache = "loaded"
                # Kept, so that close() does not read the cache again.
                self._index = cached
                self._index_dirty = False
                self._checked = 0
                return False
            if cached is not None:
                cached.extend(mm, self._size)
                self.stats.cache = "extended"
            else:
                cached = LogIndex.build(mm, self._size)
                self.stats.cache = "built"
            self._index = cached
            self._index_dirty = True
            self._checked = 0
        elif self._index.size < self._size:
            self._index.extend(mm, self._size)
            self._index_dirty = True
        if not self._index_dirty:
            return False
        self._save_index()
        return True

    def needs_checkpoint(self) -> bool:
        """Whether opening and closing this log as a writer would add a checkpoint.

        That is: tree entries follow the last usable checkpoint (or there is
        none), and one more fits in the 1% budget.
        """
        return self._checkpoint_line(closing=True) is not None

    def _save_index(self) -> None:
        if self._index is None or self._fd is None or self.read_only:
            return
        if not wants_cache(self._size):
            # No cache file for a log this small: no need to map and index
            # what this process just appended either.
            self._index_dirty = False
            return
        mm = self._map()
        if self._index.size < self._size:
            self._index.extend(mm, self._size)
        if save_cache(self._index, mm, os.fstat(self._fd), self._path) is not None:
            self.stats.cache_saved = True
        self._index_dirty = False

    # ── closing ──

    def _cache_on_close(self) -> None:
        """Save the index cache when that costs no pass over the log, or when the
        next open needs an index anyway.

        An index in memory (this process built or loaded it) is extended by
        what was appended, and saved if it changed.  Without one, a log that
        ends on a checkpoint opens without an index, so none is made: a
        resume and quit of a large log stays as cheap as of a small one.  A
        log with entries after its last checkpoint (the budget refused one)
        is indexed now, as its next open would be.
        """
        if self._index is not None:
            if self._index_dirty or self._index.size < self._size:
                self._save_index()
            return
        if self._cp_offset is not None and not self._nodes_since_cp:
            return
        self._refresh_cache(trust_header=True)

    def close(self) -> None:
        """Write a final checkpoint and the index cache (writers), release the lock."""
        if self._closed:
            return
        self._closed = True
        if self._fd is None:
            return
        try:
            if not self.read_only and not self._broken:
                with contextlib.suppress(SessionWriteError):
                    self._maybe_checkpoint(closing=True)
                with contextlib.suppress(SessionError, OSError):
                    self._cache_on_close()
        finally:
            self._index = None
            if self._mm is not None:
                self._mm.close()
                self._mm = None
            os.close(self._fd)  # also releases the flock
            self._fd = None

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A forgotten manager must not keep the lock; no checkpoint here.
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "writer"
        return f"<SessionManager {self.id} {mode} {self._path}>"


_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY)


def _readable(path: Path) -> bool:
    try:
        os.close(open_log(path))
    except (OSError, SessionError):
        return False
    return True


def open_log(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int:
    """Open a log file, refusing anything but a regular file without blocking on it.

    O_NONBLOCK keeps a FIFO named like a log from hanging the open; it is
    cleared again once the file is known to be regular.  A folder is "not a
    regular file" whether it is opened for reading (which succeeds) or for
    writing (EISDIR), so every command names it the same way.
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise SessionError(f"{os.fspath(path)}: not a regular file") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SessionError(f"{os.fspath(path)}: not a regular file")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def symlink_refusal(path: str | os.PathLike[str]) -> str:
    """A writer's refusal of a log that is a symbolic link."""
    return f"{os.fspath(path)}: refusing to write through a symbolic link"


def cannot_keep(target: Path, exc: OSError) -> str:
    """Why a writer leaves a log with a torn tail as it is: ``exc`` from :func:`keep_bytes`."""
    return (
        f"{target}: cannot keep the torn last line there ({exc.strerror}); the log is left as it is"
    )


def _check_keep_target(st: os.stat_result, source: os.stat_result | None, target: Path) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(target))
    if source is not None and os.path.samestat(st, source):
        # Appended there, the bytes would be cut off again with the tail.
        raise OSError(errno.EINVAL, "it is a hard link to the log itself", str(target))


def keep_problem(target: Path, source: os.stat_result) -> str | None:
    """What :func:`keep_bytes` would refuse about ``target`` (in :func:`cannot_keep`'s
    words), or None: for a dry run, which neither creates nor writes it."""
    flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        try:
            fd = os.open(target, flags)
        except FileNotFoundError:
            if os.access(target.parent, os.W_OK | os.X_OK):
                return None  # it would be created
            raise OSError(errno.EACCES, os.strerror(errno.EACCES)) from None
        try:
            _check_keep_target(os.fstat(fd), source, target)
        finally:
            os.close(fd)
    except OSError as exc:
        return cannot_keep(target, exc)
    return None


def keep_bytes(target: Path, data: bytes, *, source: int | None = None) -> None:
    """Append ``data`` to ``target`` (created 0600) and sync it: where bytes
    that cannot stay in a log are kept (``<file>.corrupt``).  If ``target``
    does not end in a newline, one is written first, so each piece kept
    starts a line of its own.  ``source``, the descriptor of the file the
    bytes come from, must not be ``target`` itself (a hard link).

    Raises OSError; on failure ``target`` is cut back to what it held.
    """
    # Read-write and non-blocking: a FIFO there opens at once (a write-only
    # open would wait for a reader) and is refused below.
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    cfd = os.open(target, flags, 0o600)
    try:
        st = os.fstat(cfd)
        _check_keep_target(st, None if source is None else os.fstat(source), target)
        kept = st.st_size
        if kept and os.pread(cfd, 1, kept - 1) != b"\n":
            # Kept pieces each start a line: two torn tails stay told apart.
            data = b"\n" + data
        try:
            os.fchmod(cfd, 0o600)
            _write_all(cfd, data)
            os.fsync(cfd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(cfd, kept)
            raise
    finally:
        os.close(cfd)


MAX_HEADER = 1 << 20
"""A first line longer than this is not a header (it is not read further)."""


def read_header_fd(fd: int, path: Path) -> SessionHeader:
    """The header of the log open at ``fd`` (``path`` names it in errors)."""
    head = bytearray()
    want = 4096  # a header is a few hundred bytes; longer first lines read on
    while len(head) <= MAX_HEADER:
        chunk = os.pread(fd, want, len(head))
        want = 65536
        if not chunk:
            break
        head += chunk
        if b"\n" in chunk:
            break
    if not head:
        raise CorruptSession(path, None, "empty file, not a session log")
    end = head.find(b"\n")
    if end < 0 and len(head) > MAX_HEADER:
        raise CorruptSession(path, 1, "the first line is not a session header (over 1 MiB long)")
    line = bytes(head[: end if end >= 0 else len(head)])
    if not scanner.validate(line):
        raise CorruptSession(
            path, 1, "the first line is not a session header (not a complete JSON object)"
        )
    try:
        obj = load_object(line)
        if obj.get("type") != "session":
            raise FormatError("the first line is not a session header")
        return parse_header(obj)
    except FormatError as exc:
        raise CorruptSession(path, 1, str(exc)) from None


def read_header(path: str | os.PathLike[str]) -> SessionHeader:
    """The header of a log, reading only its first line."""
    p = Path(path)
    try:
        fd = open_log(p)
    except OSError as exc:
        raise SessionError(f"{p}: cannot open: {exc.strerror}") from None
    try:
        return read_header_fd(fd, p)
    finally:
        os.close(fd)


def _session_files(folder: Path, cwd: str | None) -> Iterator[tuple[str, Path]]:
    """(session id, path) of the logs in a folder; with ``cwd``, only that cwd's."""
    for p in log_files(folder):
        m = SESSION_FILE_RE.match(p.name)
        try:
            header = read_header(p)
        except SessionError:
            # Listed as unreadable, so found by its name's id: opening it
            # then says what is wrong.
            if m:
                yield m.group("id"), p
            continue
        if cwd is not None and header.cwd != cwd:
            continue
        yield header.id, p


def resume_prefix(manager: SessionManager) -> str:
    """The id prefix that ``awl --resume`` needs for this session, from its folder's file names."""
    ids = [manager.id]
    for p in log_files(manager.path.parent):
        m = SESSION_FILE_RE.match(p.name)
        if m:
            ids.append(m.group("id"))
    return unique_prefixes(ids)[manager.id]
