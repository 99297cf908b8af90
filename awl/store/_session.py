"""SessionManager: one session, open for writing or reading — a facade.

It composes the store's units and holds what ties them together: the
:class:`~._logfile.LogFile` (lock, bytes, appends), the
:class:`~._state.SessionState` (a value, replaced on each append or
checkpoint), the :class:`~._index_keeper.IndexKeeper` (the one path to a
current index), and the entries this process appended.  Opening is
:func:`~._recovery.recover`; reading entries is :mod:`._reader`; when to
checkpoint is :class:`~._checkpoint.CheckpointPolicy`; lookups are
:mod:`._catalog` and :mod:`._listing`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..conversation import Conversation, Message, Usage
from ..errors import CorruptSession, FormatError, SessionError, SessionWriteError
from ..paths import project_dir, recorded_cwd, session_file_name
from . import scanner
from ._catalog import find_session, most_recent
from ._checkpoint import CheckpointPolicy
from ._clock import format_timestamp, is_timestamp
from ._codec import (
    check_message,
    entry_message,
    message_to_disk,
    parse_line,
    serialize_entry,
    serialize_header,
    serialize_new_entry,
)
from ._derive import free_window, from_index
from ._entries import (
    RECENT,
    DiskContentBlock,
    DiskMessage,
    DiskToolResult,
    DiskUnknownBlock,
    EntryBase,
    Location,
    MessageEntry,
    NewEntry,
    SessionEntry,
    SessionHeader,
    UnknownEntry,
)
from ._fs import Env, default_env
from ._ids import ID_SPACE, IdPermutation, uuid7
from ._index import LogIndex
from ._index_keeper import IndexKeeper
from ._listing import SessionInfo, list_all_sessions, list_sessions
from ._logfile import LogFile
from ._logmap import LogMap, Passing
from ._reader import (
    StaleIndex,
    branch_messages,
    branch_positions,
    entry_at,
    locations,
    message_at,
    parse_at,
    stamped_message_at,
)
from ._recovery import recover
from ._state import MAX_REPLACED, SessionState
from ._tree import Tree

_T = TypeVar("_T")

_SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True, slots=True)
class OpenStats:
    """How an open became ready and what it did (reindex reports it; tests read it)."""

    mode: str = "new"  # "checkpoint", "index" or "new"
    tail_lines: int = 0  # lines read after the checkpoint believed
    cache: str = "none"  # "none", "loaded", "built", "extended", "rebuilt" (the cache lied)
    cache_saved: bool = False  # this manager wrote the index cache file
    trimmed: int = 0  # bytes moved to .corrupt (or, for a reader, ignored)
    checkpoints_written: int = 0
    checkpoint_offset: int | None = None  # the checkpoint an open believed
    cache_error: str | None = None  # why the cache file could not be written, if so


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _one_at_a_time(
    method: Callable[Concatenate[SessionManager, _P], _R],
) -> Callable[Concatenate[SessionManager, _P], _R]:
    """A manager's method that runs while no other thread is in one of them: its
    writes, and the index every read of the tree goes through."""

    def serialized(self: SessionManager, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    functools.update_wrapper(serialized, method)  # its name and docstring
    return serialized


class SessionManager:
    """An open session: its log, tree and state.

    Make one with :meth:`create`, :meth:`open` or :meth:`continue_recent`.
    A writer holds an exclusive lock on the file until :meth:`close`.
    ``env`` is the file-system seam (:class:`awl.store.Env`) and
    ``checkpoints`` the checkpoint policy, both defaults unless given.

    Threads may share a manager: its writes (appends, a branch chosen, a
    checkpoint, the close) run one at a time, each whole before the next,
    and so does each use of the index; a read between two writes sees the
    log as the first left it.
    """

    def __init__(
        self,
        path: Path,
        header: SessionHeader,
        state: SessionState,
        *,
        read_only: bool,
        env: Env,
        checkpoints: CheckpointPolicy,
        log: LogFile | None = None,
    ) -> None:
        self._lock = threading.RLock()  # see _one_at_a_time
        self._path = path
        self.header = header
        self.read_only = read_only
        self._env = env
        self._policy = checkpoints
        self._log = log
        self._state = state
        self._keeper = IndexKeeper(path, env)
        self._pending: list[tuple[bytes, MessageEntry]] = []  # before the file exists
        self._mine: dict[str, MessageEntry] = {}  # entries this process appended
        self._mode = "new"
        self._tail_lines = 0
        self._trimmed = 0
        self._checkpoint_offset: int | None = None
        self._written = 0  # checkpoints written
        self._ids = IdPermutation(header.id)  # id numbers <-> ids (awl.store._ids)
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
        env: Env | None = None,
        checkpoints: CheckpointPolicy | None = None,
        session_id: str | None = None,
        created: str | None = None,
    ) -> SessionManager:
        """A new session for ``cwd``.  Nothing is written until the first user message
        (or :meth:`append_entries`).

        ``session_id`` (a lowercase UUID) and ``created`` (a timestamp as the
        log writes them, ``2026-04-25T17:40:15.990Z``) default to a new UUIDv7
        and now: an import gives its source's; ValueError for anything else, and
        for a ``provider`` or ``model`` that is no string.  Raises
        :class:`SessionError` when ``cwd`` is not valid UTF-8.
        """
        where = recorded_cwd(cwd)
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
        now = created if created is not None else format_timestamp(t)
        sid = session_id if session_id is not None else uuid7(t)
        # Both name the log's file: anything else could put it outside its folder.
        if not (isinstance(sid, str) and _SESSION_ID.fullmatch(sid)):
            raise ValueError(f"session_id must be a lowercase UUID, not {sid!r}")
        if not is_timestamp(now):
            raise ValueError(
                f"created must be a timestamp such as {format_timestamp(t)!r}, not {now!r}"
            )
        for value, name in ((provider, "provider"), (model, "model")):
            if not isinstance(value, str):
                # The header must name them as text: refused now, not at the first prompt.
                raise ValueError(f"{name} must be a string, not {value!r}")
        header = SessionHeader(id=sid, timestamp=now, cwd=where, provider=provider, model=model)
        path = project_dir(header.cwd, session_dir) / session_file_name(now, sid)
        state = SessionState.of_header(header, free_ids=(0, ID_SPACE))  # nothing is used yet
        return cls(
            path,
            header,
            state,
            read_only=False,
            env=env or default_env(),
            checkpoints=checkpoints or CheckpointPolicy(),
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        env: Env | None = None,
        checkpoints: CheckpointPolicy | None = None,
    ) -> SessionManager:
        """Open an existing log and become ready.

        A writer takes the lock (:class:`SessionBusy` if another process has
        it), trims a torn last line into ``<file>.corrupt`` and may append a
        checkpoint.  ``read_only`` takes no lock and never writes anything.
        Raises :class:`CorruptSession` for a log it will not guess at.
        """
        p = Path(os.path.abspath(os.fspath(path)))
        e = env or default_env()
        log = LogFile.open(p, read_only=read_only, env=e)
        try:
            self = cls(
                p,
                log.header,
                SessionState.of_header(log.header),
                read_only=read_only,
                env=e,
                checkpoints=checkpoints or CheckpointPolicy(),
                log=log,
            )
            found = recover(log, self._keeper, self._policy.search)
            self._state, self._mode, self._tail_lines = found.state, found.mode, found.tail_lines
            self._trimmed = found.torn
            if found.checkpoint is not None:
                self._checkpoint_offset = found.checkpoint[0].offset
            if not read_only:
                if found.torn_at is not None:
                    log.trim(found.torn_at, found.torn_at + found.torn)
                self._after_writer_open()
        except BaseException:
            log.close()
            raise
        return self

    def _after_writer_open(self) -> None:
        # A log without a recent checkpoint (an older awl's, another tool's,
        # or one cut short by a crash) gets one now, so the next open is fast.
        self._checkpoint(closing=True)
        if self._keeper.dirty:
            assert self._log is not None and self._log.fd is not None
            self._keeper.save(self._log.map(), self._log.fd, self._log.size)

    @classmethod
    def continue_recent(
        cls, cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
    ) -> SessionManager | None:
        """Open the session of ``cwd`` with the latest activity, or None if it has none
        (see :func:`awl.store.most_recent` for a log that cannot be read)."""
        path = most_recent(cwd, session_dir=session_dir)
        return None if path is None else cls.open(path)

    @classmethod
    def find(
        cls,
        id_or_prefix: str,
        cwd: str | os.PathLike[str],
        *,
        session_dir: str | os.PathLike[str] | None = None,
    ) -> Path:
        """The log whose session id is or starts with ``id_or_prefix`` (see
        :func:`awl.store.find_session`)."""
        return find_session(id_or_prefix, cwd, session_dir=session_dir)

    @classmethod
    def list_sessions(
        cls, cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
    ) -> list[SessionInfo]:
        """The sessions whose header cwd is ``cwd``, oldest first (see
        :func:`awl.store.list_sessions`)."""
        return list_sessions(cwd, session_dir=session_dir)

    @classmethod
    def list_all_sessions(
        cls, *, session_dir: str | os.PathLike[str] | None = None
    ) -> dict[str, list[SessionInfo]]:
        """Every project's sessions, grouped by header cwd (:func:`awl.store.list_all_sessions`)."""
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
    def state(self) -> SessionState:
        """The session's state as this manager knows it now (a value: later appends
        make a new one)."""
        return self._state

    @property
    def leaf_id(self) -> str | None:
        """The id of the current leaf (the last tree entry), or None."""
        return self._state.leaf

    @property
    def message_count(self) -> int:
        """Message entries on the branch from the root to the leaf."""
        return self._state.message_count

    @property
    def entry_count(self) -> int:
        """Tree entries in the log."""
        return self._state.entry_count

    @property
    def first_prompt(self) -> str:
        """The opening words of the first user prompt on the branch."""
        return self._state.first_prompt

    @property
    def last_activity(self) -> str:
        """The timestamp of the leaf entry (the header's when there is none)."""
        return self._state.last_activity

    @property
    def size(self) -> int:
        """Bytes of the log that count."""
        return 0 if self._log is None else self._log.size

    @property
    def stopped(self) -> str | None:
        """Why this writer takes no more appends, once it has found out (another
        program changed the log; a failed write could not be undone), or None.
        Opening the session again goes on from what the log holds."""
        log = self._log
        if log is None:
            return None
        return "a failed write could not be undone" if log.broken else log.changed

    @property
    def stats(self) -> OpenStats:
        """How the open became ready and what this manager did since."""
        return OpenStats(
            mode=self._mode,
            tail_lines=self._tail_lines,
            cache=self._keeper.cache,
            cache_saved=self._keeper.saved,
            cache_error=self._keeper.save_error,
            trimmed=self._trimmed,
            checkpoints_written=self._written,
            checkpoint_offset=self._checkpoint_offset,
        )

    def active_model(self) -> tuple[str, str]:
        """(provider, model) of the last user message on the branch, else the header's."""
        return self._state.provider, self._state.model

    # ── the index ──

    @_one_at_a_time
    def _indexed(self, fn: Callable[[LogIndex, Tree], _T]) -> _T:
        """``fn(index, tree)`` over a current index of the whole log (see
        :meth:`IndexKeeper.use`); the state's leaf must be in it."""
        self._check_open()
        log = self._log
        if log is None or log.fd is None:
            raise SessionError("the session has no log on disk yet")
        leaf = self._state.leaf

        def checked(index: LogIndex, tree: Tree) -> _T:
            if leaf is not None and leaf not in self._mine and leaf not in tree:
                raise StaleIndex  # the leaf a checkpoint located is always in a true index
            return fn(index, tree)

        return self._keeper.use(log.map(), log.fd, log.size, checked)

    @_one_at_a_time
    def build_index(self) -> bool:
        """Make the index cache match the whole log (a writer's job; a reader only indexes).

        Returns True when the cache file was (re)written.
        """
        if self.read_only or self._log is None or self._log.fd is None:
            self._indexed(lambda index, tree: None)
            return False
        return self._keeper.refresh(
            self._log.map(), self._log.fd, self._log.size, trust_header=False
        )

    # ── reading entries ──

    def _location_entry(self, loc: Location) -> SessionEntry:
        if loc.id in self._mine:
            return _own(self._mine[loc.id])
        self._check_open()
        assert self._log is not None
        return entry_at(self._log.map(), loc, self._path)

    def last_user_message(self) -> MessageEntry | None:
        """The last user message of the current branch (a prompt or a tool round's
        results), when it is among the last few messages the state keeps (what
        an open reads anyway); else None."""
        for loc in reversed(self._state.recent):
            entry = self._location_entry(loc)
            if isinstance(entry, MessageEntry) and entry.message.role == "user":
                return entry
        return None

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        """The tree entry with this id, or None."""
        if entry_id in self._mine:
            return _own(self._mine[entry_id])
        if self._log is None:
            return None

        def look(index: LogIndex, tree: Tree) -> SessionEntry | None:
            pos = tree.pos_of(entry_id)
            if pos is None:
                return None
            rows = tree.rows[pos : pos + 1]
            return self._location_entry(locations(index, tree, rows)[0])

        return self._indexed(look)

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), root first."""
        start = from_id if from_id is not None else self._state.leaf
        if start is None:
            return []
        if self._log is None:
            entries = [e for _, e in self._pending]
            ids = [e.base.id for e in entries]
            if start not in ids:
                raise KeyError(start)
            return [_own(e) for e in entries[: ids.index(start) + 1]]

        def walk(index: LogIndex, tree: Tree) -> list[SessionEntry]:
            pos = tree.pos_of(start)
            if pos is None:
                raise KeyError(start)
            branch = tree.branch(pos)
            return [self._location_entry(loc) for loc in locations(index, tree, tree.rows[branch])]

        return self._indexed(walk)

    def branch_message_ids(self, from_id: str | None = None) -> list[str]:
        """The ids of the message entries from the root to ``from_id`` (default: the
        leaf), root first, found through the index without reading a message.

        KeyError when the log has no entry ``from_id``.  With :meth:`get_entry`
        this reads a few messages of a long branch without parsing the rest.
        """
        start = from_id if from_id is not None else self._state.leaf
        if start is None:
            return []
        if self._log is None:
            pending = [e.base.id for _, e in self._pending]
            if start not in pending:
                raise KeyError(start)
            return pending[: pending.index(start) + 1]

        def ids(index: LogIndex, tree: Tree) -> list[str]:
            if tree.pos_of(start) is None:
                raise KeyError(start)
            return [loc.id for loc in branch_messages(index, tree, start)]

        return self._indexed(ids)

    def child_ids(self, entry_id: str) -> list[str]:
        """The ids of the tree entries whose parent is ``entry_id``, in file order (more
        than one where the tree branches there), found through the index.

        KeyError when the log has no entry ``entry_id``.
        """
        if self._log is None:
            pending = [e.base for _, e in self._pending]
            if entry_id not in [b.id for b in pending]:
                raise KeyError(entry_id)
            return [b.id for b in pending if b.parent_id == entry_id]

        def ids(index: LogIndex, tree: Tree) -> list[str]:
            pos = tree.pos_of(entry_id)
            if pos is None:
                raise KeyError(entry_id)
            return [tree.id_at(int(k)) for k in tree.children(pos)]

        return self._indexed(ids)

    def on_branch(self, entry_id: str) -> bool:
        """Whether the tree entry ``entry_id`` lies on the current branch (from the
        root to the leaf), found through the index without reading an entry."""
        leaf = self._state.leaf
        if leaf is None:
            return False
        if self._log is None:
            pending = [e.base.id for _, e in self._pending]
            return entry_id in pending[: pending.index(leaf) + 1] if leaf in pending else False

        def has(index: LogIndex, tree: Tree) -> bool:
            pos = tree.pos_of(entry_id)
            return pos is not None and bool((branch_positions(tree, leaf) == pos).any())

        return self._indexed(has)

    def stream_branch(self) -> Iterator[tuple[str, str, Message]]:
        """(entry id, timestamp, message) of each message on the branch from the
        root to the leaf, root first: :meth:`rebuild_conversation`'s messages with
        their entries' ids and times, and the provider, model and usage each
        records, each parsed as the pass reaches it (memory holds one; the pass
        releases the log's pages behind it)."""
        if self._log is None:
            for _, e in self._pending:
                yield e.base.id, e.base.timestamp, _mine_message(e)
            return
        leaf = self._state.leaf
        if leaf is None:
            return
        self._check_open()
        log = self._log.map()
        locs: list[Location] = []

        def read(k: int) -> Callable[[LogIndex, Tree], tuple[str, Message] | None]:
            # Through the index again: an index found stale is rebuilt, and read again.
            def at(index: LogIndex, tree: Tree) -> tuple[str, Message] | None:
                nonlocal locs
                locs = branch_messages(index, tree, leaf)
                if k >= len(locs):
                    if k == 0:
                        return None  # a branch of other entries only (a model change)
                    raise StaleIndex
                return stamped_message_at(log, locs[k], self._path, served=True)

            return at

        k = 0
        first = self._indexed(read(0))
        if first is None:
            return
        stamp, message = first
        behind: Passing | None = None  # the pass releases the pages behind it
        while True:
            yield locs[k].id, stamp, message
            k += 1
            if k >= len(locs):
                return
            nxt = locs[k]
            mine = self._mine.get(nxt.id)  # this process wrote it: in memory already
            if mine is not None:
                stamp, message = mine.base.timestamp, _mine_message(mine)
                continue
            self._check_open()
            if behind is None:
                behind = log.passing(nxt.offset)
            behind.at(nxt.offset)
            try:
                stamp, message = stamped_message_at(log, nxt, self._path, served=True)
            except StaleIndex:
                again = self._indexed(read(k))
                assert again is not None  # k > 0: a branch shorter than k is stale
                stamp, message = again

    def entries_off_branch(self) -> int:
        """Tree entries not on the branch from the root to the leaf: other branches
        (a rewind, a fork, turns an import moved aside), which a rebuild leaves
        out.  Counted through the index, reading no entry."""
        leaf = self._state.leaf
        if self._log is None or leaf is None:
            return 0
        return self._indexed(lambda index, tree: len(tree) - len(branch_positions(tree, leaf)))

    @_one_at_a_time
    def branch_from(self, entry_id: str) -> None:
        """Make the branch from the root to ``entry_id`` the current one: the
        conversation is that branch's, and the next entry appended goes under
        ``entry_id``, a branch of its own (what came after it stays in the log,
        on its branch).  Nothing is written until that append: a close before
        it leaves the log as it was, its leaf where it was.

        KeyError when the log has no tree entry ``entry_id``, or has no file yet
        (entries held before the first user message are one branch: there is
        nothing to branch from).
        """
        self._check_writable()
        if entry_id == self._state.leaf:
            return
        if self._log is None:
            raise KeyError(entry_id)

        def derive(index: LogIndex, tree: Tree) -> tuple[SessionState, bool] | None:
            pos = tree.pos_of(entry_id)
            if pos is None:
                return None
            state = from_index(self.header, index, tree, self._log_map(), self._path, leaf_pos=pos)
            return state, pos != len(tree) - 1

        found = self._indexed(derive)
        if found is None:
            raise KeyError(entry_id)
        state, detached = found
        now = self._state
        # The log is the same: its checkpoints' budget, its free ids, its lines.
        self._state = replace(
            state,
            mark=now.mark,
            free_ids=now.free_ids if now.free_ids is not None else state.free_ids,
            line_count=now.line_count,
            detached=detached,
        )

    def rebuild_conversation(self) -> Conversation:
        """The Conversation of the branch, materialized lazily.

        Messages are parsed from the mapped log on first access; the last few
        are found through the checkpoint, the rest through the index.  A
        message first read from the log after :meth:`close` raises
        :class:`SessionError` (read what you need while the session is open;
        those this process appended are held in memory, and still read).
        """
        if self._log is None:
            return Conversation(_mine_message(e) for _, e in self._pending)
        state = self._state
        count, recent, leaf = state.message_count, state.recent, state.leaf
        locs: list[Location] | None = None  # the branch's messages, once the index was asked
        behind: Passing | None = None  # a pass over the branch holds a window, not all it read

        def message(loc: Location) -> Message:
            nonlocal behind
            mine = self._mine.get(loc.id)
            if mine is not None:
                return _mine_message(mine)
            self._check_open()
            assert self._log is not None
            log = self._log.map()
            if behind is None or behind.log is not log:
                behind = log.passing(loc.offset)
            behind.at(loc.offset)
            return message_at(log, loc, self._path)

        def read(i: int) -> Callable[[LogIndex, Tree], Message]:
            def at(index: LogIndex, tree: Tree) -> Message:
                nonlocal locs
                locs = branch_messages(index, tree, leaf)
                if len(locs) < count:
                    raise StaleIndex
                return message(locs[i])

            return at

        def load(i: int) -> Message:
            k = i - (count - len(recent))
            if k >= 0:
                # A located line that is not that entry is the checkpoint's
                # error, not the log's: the index says what is there.
                with contextlib.suppress(StaleIndex, CorruptSession):
                    return message(recent[k])
            if locs is not None:
                # The branch located once: the rest of a pass costs a parse each.
                with contextlib.suppress(StaleIndex):
                    return message(locs[i])
            return self._indexed(read(i))

        return Conversation(lazy_count=count, loader=load)

    def recent_entries(self, n: int = RECENT) -> list[MessageEntry]:
        """The last ``n`` message entries of the branch (through the checkpoint when it can)."""
        if n <= 0:
            return []
        if self._log is None:
            return [_own(e) for _, e in self._pending][-n:]
        recent = self._state.recent
        if n > len(recent) and len(recent) < self._state.message_count:
            return self._branch_messages(n)
        out: list[MessageEntry] = []
        for loc in recent[-n:]:
            try:
                entry = self._location_entry(loc)
            except (StaleIndex, CorruptSession):
                # Not the entry the checkpoint located: read the branch instead,
                # which reports the log's own corruption, if that is what it is.
                return self._branch_messages(n)
            if isinstance(entry, MessageEntry):
                out.append(entry)
        return out

    def _branch_messages(self, n: int) -> list[MessageEntry]:
        """The last ``n`` message entries of the branch, reading only those."""
        out = [self.get_entry(i) for i in self.branch_message_ids()[-n:]]
        return [e for e in out if isinstance(e, MessageEntry)]

    # ── appending ──

    @_one_at_a_time
    def append_message(
        self,
        message: Message | DiskMessage,
        *,
        provider: str | None = None,
        model: str | None = None,
        stop_reason: str | None = None,
        usage: Usage | None = None,
        replacing: int = 0,
        extra: Mapping[str, Any] | None = None,
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

        ``extra``: top-level members written after ``message`` (a user
        message's ``baseUrl``, the endpoint its request went to), kept by
        readers as :attr:`MessageEntry.extra`.
        """
        self._check_writable()
        state = self._state
        parent = self._replaced_parent(replacing, message.role) if replacing else state.leaf
        if isinstance(message, Message):
            disk = message_to_disk(
                message, provider=provider, model=model, stop_reason=stop_reason, usage=usage
            )
        else:
            disk = message
        stamp_provider = stamp_model = None
        if disk.role == "user":
            stamp_provider = provider or state.provider
            stamp_model = model or state.model
        lo, hi = self._free_ids()
        entry = MessageEntry(
            base=EntryBase(self._ids.id_of(lo), parent, format_timestamp()),
            message=disk,
            provider=stamp_provider,
            model=stamp_model,
            extra=dict(extra) if extra else {},
        )
        left = (lo + 1, hi)
        line = serialize_entry(entry)
        try:
            # What a reader would refuse (a number as text, a dict as a tool call's
            # input, a negative count) is refused now, with nothing written: a log
            # awl writes is one it reads back.
            saved = parse_line(line)
        except FormatError as exc:
            raise FormatError(f"the message cannot be saved: {exc}; nothing was written") from None
        # Memory keeps what the log holds, not the caller's objects, which the
        # caller may go on changing.
        assert isinstance(saved, MessageEntry)
        entry = saved
        if self._log is None and disk.role != "user":
            # Nothing touches the disk before the first user message.
            self._pending.append((line, entry))
            self._state = state.appended(entry, None, free_ids=left)
        elif self._log is None:
            self._create(line, entry, left)
        else:
            offset = self._log.append(line)
            at = Location(offset, len(line) - 1, state.line_count, entry.base.id)
            self._state = state.appended(entry, at, replacing=replacing, free_ids=left)
        self._mine[entry.base.id] = entry
        # The entry is saved; a checkpoint is an optimization, and one that
        # fails to write (disk full) must not fail the append.
        with contextlib.suppress(SessionWriteError):
            self._checkpoint(closing=False)
        return entry.base.id

    @_one_at_a_time
    def append_entries(
        self,
        entries: Sequence[NewEntry],
        *,
        checkpoint: bool = False,
        sync: bool = True,
        parsed: bool = False,
    ) -> list[str | None]:
        """Append a batch of entries whose parents are given (see :class:`NewEntry`);
        returns each one's id (None for an entry outside the tree).

        The batch is one write: on disk whole, or not at all.  The last tree
        entry of the batch becomes the leaf.  The state follows from the
        batch when the leaf's branch runs through it to a root or to the
        leaf before it (what an import writes), else it is derived from the
        index, a pass over the log: this is how a tree is written at once
        (an import), not how a conversation grows.  ``checkpoint`` ends the
        write with the checkpoint a close would add (when the state follows
        from the batch), so that a batch written last costs one sync, not two.

        ``sync=False``, when the batch creates the log, leaves its sync and its
        name for later: until :meth:`close` (or any later write or read of the
        log) gives them, the log is under a hidden name only, which no other
        process sees and a crash leaves behind.  ``close`` then raises
        :class:`SessionWriteError` if it cannot, leaving nothing of the log.
        A writer that has more to do meanwhile (an import's next session)
        gains the time the disk takes.  A batch appended to a log that exists
        is synced whatever ``sync`` says.

        ``parsed=True`` says that the entries' ``fields`` and their blocks of
        types awl does not know came from parsed JSON (``orjson.loads``),
        which makes no NaN and no infinity: they are not searched for one (an
        import's, whose walk would cost as much as writing them).  Otherwise
        an entry holding one is refused (JSON has no form for it).
        """
        self._check_writable()
        for k, entry in enumerate(entries):
            _check_new_entry(k, entry)
        # Parents named by id, but the leaf's (an entry outside the tree has none:
        # one given is not written).
        named = [
            (k, e.parent)
            for k, e in enumerate(entries)
            if isinstance(e.parent, str)
            and e.parent != self._state.leaf
            and (e.node or e.message is not None)
        ]
        lost = self._absent({p for _, p in named}) if named else set()
        for k, named_parent in named:
            if named_parent in lost:
                raise ValueError(
                    f"entry {k}: parent {named_parent!r} names no entry of the log; "
                    "nothing was written"
                )
        nodes = sum(1 for e in entries if e.node or e.message is not None)
        lo, hi = self._free_ids()
        if hi - lo < nodes:
            lo, hi = self._indexed(lambda index, tree: free_window(self.header, tree))
            if hi - lo < nodes:
                raise SessionWriteError(f"{self._path}: no {nodes} entry ids are left free")
        drawn = iter(self._ids.ids_of(lo, nodes))
        lo += nodes
        ids: list[str | None] = []
        parents: list[str | None] = []
        lines: list[bytes] = []
        for entry in entries:
            parent = entry.parent
            if isinstance(parent, int):
                if not 0 <= parent < len(ids) or ids[parent] is None:
                    raise ValueError(f"entry {len(ids)}: parent {parent} is no earlier tree entry")
                parent = ids[parent]
            eid = next(drawn) if entry.node or entry.message is not None else None
            lines.append(serialize_new_entry(entry, eid, parent, parsed=parsed))
            ids.append(eid)
            parents.append(parent if eid is not None else None)
        lengths = [len(ln) for ln in lines]
        size = sum(lengths)
        log = self._log
        if log is None:
            start = len(serialize_header(self.header)) + sum(len(ln) for ln, _ in self._pending)
        else:
            start = log.size + (1 if log.needs_newline else 0)
        state = None
        if not self._pending:
            # A new log's first line is its header.
            before = self._state if log is not None else self._state.placed((), 1)
            state = before.batch_appended(
                self.header, entries, ids, parents, lengths, start, (lo, hi)
            )
        cp = None
        if state is not None and checkpoint:
            cp = self._policy.line(state, self.header, start + size, closing=True)
            if cp is not None:
                lines.append(cp)  # joined with the batch: the body is not copied again
        written = size + (len(cp) if cp is not None else 0)
        if log is None:
            self._log = LogFile.create(
                self._path,
                self.header,
                [*(ln for ln, _ in self._pending), *lines],
                self._env,
                place=sync,
            )
            self._pending.clear()
        elif written:
            log.append(b"".join(lines))
        if state is not None:
            if cp is not None:
                state = state.checkpointed(start + size, len(cp))
                self._written += 1
            self._state = state
        elif written:
            self._state = self._indexed(
                lambda index, tree: from_index(
                    self.header, index, tree, self._log_map(), self._path
                ).with_free_ids((lo, hi))
            )
        return ids

    def entries(self) -> Iterator[tuple[int, SessionEntry]]:
        """Every entry of the log after the header, in file order, with its 0-based line
        (checkpoints and blank lines left out; entries outside the tree included)."""
        log = self._log
        if log is None:
            for n, (_, pending) in enumerate(self._pending):
                yield n + 1, _own(pending)
            return
        index, _ = self._indexed(lambda index, tree: (index, tree))
        rec = index.records
        kinds = rec["kind"].tolist()
        offsets, lengths = rec["offset"].tolist(), rec["length"].tolist()
        mm = log.map()
        behind = mm.passing()
        for row in range(1, len(kinds)):
            if kinds[row] not in (scanner.KIND_MESSAGE, scanner.KIND_OTHER):
                continue
            self._check_open()  # a generator may outlive the session
            behind.at(offsets[row])
            entry = parse_at(mm, offsets[row], lengths[row], row, self._path)
            if isinstance(entry, MessageEntry | UnknownEntry):
                yield row, entry

    def _log_map(self) -> LogMap:
        assert self._log is not None
        return self._log.map()

    def _absent(self, ids: set[str]) -> set[str]:
        """Which of ``ids`` no tree entry of the log (or of the lines not yet
        written) has: through the index, which a batch whose branch leaves it
        needs anyway."""
        if self._log is None:
            return ids - {e.base.id for _, e in self._pending}
        return self._indexed(lambda index, tree: {i for i in ids if i not in tree})

    def _free_ids(self) -> tuple[int, int]:
        """The free id window to draw from: the state's, or, where no checkpoint
        recorded one (a log of an older awl or another tool) or it is used up,
        the widest gap of the log's ids, found from the index (once in a long while)."""
        bounds = self._state.free_ids
        if bounds is None or bounds[0] >= bounds[1]:
            bounds = self._indexed(lambda index, tree: free_window(self.header, tree))
        return bounds

    def _replaced_parent(self, replacing: int, role: str) -> str:
        """The parent of a message replacing the last ``replacing`` of the branch
        (see :meth:`append_message`); ValueError when they may not be replaced."""
        state = self._state
        kept = len(state.recent) - replacing  # the parent and the messages before it
        wanted = max(1, min(RECENT, state.message_count - replacing))
        if not 0 < replacing <= MAX_REPLACED or kept < wanted:
            raise ValueError(f"cannot replace {replacing} messages of the branch")
        if self._log is None or role != "user":
            raise ValueError("only a user message of a saved session replaces tool results")
        for loc in state.recent[-replacing:]:
            entry = self._mine.get(loc.id)
            if entry is None or entry.message.role != "user" or not entry.message.content:
                raise ValueError(f"{loc.id} is not a tool-results message appended by this session")
            if not all(isinstance(b, DiskToolResult) for b in entry.message.content):
                raise ValueError(f"{loc.id} holds more than tool results")
        return state.recent[-replacing - 1].id

    def _check_open(self) -> None:
        if self._closed:
            raise SessionError(f"{self._path}: session is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise SessionError(f"{self._path}: session is open read-only")
        if self._log is not None:
            self._log.check_writable()

    def _create(self, line: bytes, entry: MessageEntry, free_ids: tuple[int, int]) -> None:
        """Write the new log: the header, the messages held back, and ``entry``."""
        pending = [*self._pending, (line, entry)]
        self._log = LogFile.create(self._path, self.header, [ln for ln, _ in pending], self._env)
        state = self._state.appended(entry, None, free_ids=free_ids)
        offset = self._log.size - sum(len(ln) for ln, _ in pending)
        placed = []
        for n, (ln, e) in enumerate(pending):
            placed.append(Location(offset, len(ln) - 1, n + 1, e.base.id))
            offset += len(ln)
        self._state = state.placed(tuple(placed), len(pending) + 1)
        self._pending.clear()
        self._mode = "new"

    # ── checkpoints ──

    @_one_at_a_time
    def checkpoint(self) -> bool:
        """Write a checkpoint now if there are entries since the last one and the budget allows."""
        self._check_writable()
        return self._checkpoint(closing=True)

    def needs_checkpoint(self) -> bool:
        """Whether opening and closing this log as a writer would add a checkpoint.

        That is: tree entries follow the last usable checkpoint (or there is
        none), and one more fits in the 1% budget.
        """
        return self._checkpoint_line(closing=True) is not None

    def _checkpoint_line(self, *, closing: bool) -> tuple[bytes, SessionState] | None:
        """The checkpoint line the policy says to write now, and the state it records."""
        log = self._log
        if log is None:
            return None
        state = self._state
        if state.free_ids is None and self._keeper.index is not None:
            # An index already in memory (a log opened through it) gives the
            # id window for free; the checkpoint then records it.
            bounds = self._indexed(lambda index, tree: free_window(self.header, tree))
            state = state.with_free_ids(bounds)
        line = self._policy.line(
            state,
            self.header,
            log.size,
            closing=closing,
            newline_first=log.needs_newline,
        )
        return None if line is None else (line, state)

    def _checkpoint(self, *, closing: bool) -> bool:
        log = self._log
        if self.read_only or log is None or log.broken:
            return False
        planned = self._checkpoint_line(closing=closing)
        if planned is None:
            return False
        line, state = planned
        offset = log.append(line)
        self._state = state.checkpointed(offset, len(line))
        self._written += 1
        return True

    def checkpoint_disagreement(self) -> tuple[int, str] | None:
        """For verification: (line, how) the checkpoint this open believed differs from
        the log, or None (``awl reindex --verify`` reports it)."""
        from ._verify import checkpoint_disagreement

        self._check_open()
        if self._log is None or self._log.fd is None:
            return None
        return checkpoint_disagreement(self._log, self._state)

    # ── closing ──

    @property
    def placed(self) -> bool:
        """Whether the log is under its name, synced (False after a batch created it
        with ``sync=False``, until :meth:`close`), or not yet written at all."""
        return self._log is None or self._log.placed

    @_one_at_a_time
    def close(self) -> None:
        """Write a final checkpoint (writers), save the index cache when that is
        cheap or needed, and release the lock.

        A log created with ``sync=False`` (see :meth:`append_entries`) is synced
        and placed first: SessionWriteError if that fails (the session is
        closed, and nothing of the log is left)."""
        if self._closed:
            return
        log = self._log
        if log is None or log.fd is None:
            self._closed = True
            return
        try:
            log.place()
        except BaseException:
            self._closed = True
            self._keeper.drop()
            raise
        try:
            # A log another program changed gets nothing more: no checkpoint, and
            # no index read from pages it may have cut.
            if not self.read_only and not log.broken and not _changed(log):
                with contextlib.suppress(SessionWriteError):
                    self._checkpoint(closing=True)
                if log.changed is None:
                    with contextlib.suppress(SessionError, OSError):
                        self._cache_on_close(log)
        finally:
            self._closed = True  # after the checkpoint, which reads through the index
            self._keeper.drop()
            log.close()

    def _cache_on_close(self, log: LogFile) -> None:
        """Save the index cache when that costs no pass over the log, or when the
        next open needs an index anyway.

        An index in memory (this process built or loaded it) is extended by
        what was appended, and saved if it changed.  Without one, a log that
        ends on a checkpoint opens without an index, so none is made: a
        resume and quit of a large log stays as cheap as of a small one.  A
        log with entries after its last checkpoint (the budget refused one)
        is indexed now, as its next open would be.
        """
        assert log.fd is not None
        index = self._keeper.index
        if index is not None:
            if self._keeper.dirty or index.size < log.size:
                self._keeper.save(log.map(), log.fd, log.size)
            return
        mark = self._state.mark
        if mark.offset is not None and not mark.nodes_since:
            return
        self._keeper.refresh(log.map(), log.fd, log.size, trust_header=True)

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
        log = getattr(self, "_log", None)
        if log is not None:
            log.forget()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "writer"
        return f"<SessionManager {self.id} {mode} {self._path}>"


def _own(entry: MessageEntry) -> MessageEntry:
    """A copy of an entry held in memory, for a caller: what it does to the
    copy's lists and dicts cannot change what the session holds.  Only what
    can change is copied (the blocks but an unknown one's are frozen)."""
    m = entry.message
    content: list[DiskContentBlock] = [
        DiskUnknownBlock(copy.deepcopy(b.raw)) if type(b) is DiskUnknownBlock else b
        for b in m.content
    ]
    message = DiskMessage(
        m.role, content, m.provider, m.model, m.stop_reason, m.usage, m.compaction
    )
    extra = copy.deepcopy(entry.extra) if entry.extra else {}
    return MessageEntry(entry.base, message, entry.provider, entry.model, extra)


def _mine_message(entry: MessageEntry) -> Message:
    """The Conversation message of an entry held in memory: an unknown block's
    dict a copy (an Opaque block holds it as it is)."""
    if any(type(b) is DiskUnknownBlock for b in entry.message.content):
        entry = _own(entry)
    return entry_message(entry)


def _changed(log: LogFile) -> bool:
    """Whether another program changed the log (an fstat that fails counts as so)."""
    try:
        return log.notice_change()
    except OSError:
        return True


_RESERVED_TYPES = frozenset(("message", "session", "checkpoint"))


def _check_new_entry(k: int, entry: NewEntry) -> None:
    """Refuse, before anything is written, an entry whose line readers would refuse
    or take for another kind than the writer does: a timestamp not in the
    format's form or a parent of no kind the batch takes (ValueError); a
    message no reader would take (FormatError, as :meth:`append_message`
    refuses it); an entry of another type named as one of the format's own,
    or whose members would give it an id or a parent the batch did not."""
    stamp, parent = entry.timestamp, entry.parent
    if not (is_timestamp(stamp)):
        raise ValueError(f"entry {k}: timestamp {stamp!r} is not one of the log's (UTC, ms, Z)")
    if not (parent is None or type(parent) is int or (isinstance(parent, str) and parent)):
        raise ValueError(
            f"entry {k}: parent {parent!r} is neither an entry id, an index in the batch nor None"
        )
    if entry.message is not None:
        try:
            check_message(entry.message)
            if entry.message.role == "user":
                for value, key in ((entry.provider, "provider"), (entry.model, "model")):
                    if not isinstance(value, str):
                        raise FormatError(f"a user message entry needs a string {key!r}")
        except FormatError as exc:
            raise FormatError(f"entry {k} cannot be saved: {exc}; nothing was written") from None
        return  # the format's members come first; its fields cannot replace them
    if not isinstance(entry.type, str) or entry.type in _RESERVED_TYPES:
        raise ValueError(f"entry {k}: type {entry.type!r} is not one for an entry of another type")
    taken = {"id", "parentId", "type"} & entry.fields.keys()
    if taken:
        raise ValueError(f"entry {k}: its fields name {sorted(taken)}, which the batch gives")
