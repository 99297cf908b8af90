"""One log file, open: the lock, the header, the bytes, appends and cuts.

The durability contract of a log (``docs/reliability.md``, "Durability"):

- An append is one write of a whole line on an ``O_APPEND`` descriptor
  (looping on short writes), then an fsync; if either fails the file is cut
  back to its size before the line, so no part of it stays.  If even the
  cut fails, the log file refuses further appends (the torn bytes stay
  last, where the next open trims them).
- A new log is written whole under a hidden name, synced, renamed into
  place without ever replacing a file, and its folder synced: a crash
  leaves no log, or the complete first lines, never an empty or torn log.
  Every folder made for it has its name synced in its parent first.  A
  writer may leave the sync and the rename for later (an import, which
  converts its next session meanwhile): until then the log has only its
  hidden name, and no other process sees it.
- A torn last line is cut off only once its bytes are durable in
  ``<log>.corrupt`` (whose name is synced in its folder when new); keeping
  them is idempotent, so a repair interrupted between the two steps adds
  no second copy when it runs again.  A long torn tail is never mapped or
  read whole (:func:`~._logmap.torn_tail`, :func:`~._fs.keep_bytes`): its
  length costs no memory.
- A writer holds an exclusive ``flock`` until it closes (an open waits
  :data:`LOCK_GRACE` for it); a reader takes no lock and writes nothing.
  Nothing is written through a symbolic link.

Every call that can fail goes through the :class:`~awl.store._fs.Env`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from ..errors import (
    CorruptSession,
    FormatError,
    SessionBusy,
    SessionError,
    SessionNotFound,
    SessionWriteError,
)
from ..paths import corrupt_path, creating_path, missing_text
from . import scanner
from ._codec import load_object, parse_header, serialize_header
from ._entries import FORMAT_VERSION, SessionHeader
from ._fs import (
    Env,
    check_keep_target,
    default_env,
    keep_bytes,
    make_private_dirs,
    open_regular,
    write_all,
)
from ._header import foreign_log, foreign_problem
from ._logmap import LogMap

MAX_HEADER = 1 << 20
"""A first line longer than this is not a header (it is not read further)."""

_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY)


def symlink_refusal(path: str | os.PathLike[str]) -> str:
    """A writer's refusal of a log that is a symbolic link."""
    return f"{os.fspath(path)}: refusing to write through a symbolic link"


def cannot_keep(target: Path, exc: OSError) -> str:
    """Why a writer leaves a log with a torn tail as it is: ``exc`` from keeping its bytes."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        then = "free some space, then open the session again"
    elif exc.errno in _NOT_WRITABLE:
        then = "make its folder writable, then open the session again"
    else:
        then = "open the session again once it can be written"
    return (
        f"{target}: cannot keep the torn last line there ({exc.strerror}); the log is left "
        f"as it is ({then})"
    )


def keep_problem(target: Path, source: os.stat_result) -> str | None:
    """What keeping a torn tail in ``target`` would refuse (in :func:`cannot_keep`'s
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
            check_keep_target(os.fstat(fd), source, target)
        finally:
            os.close(fd)
    except OSError as exc:
        return cannot_keep(target, exc)
    return None


class ForeignLog(CorruptSession):
    """Another tool's session log (:func:`~._header.foreign_log`), named as every
    command names it: awl takes it in by an import, never opens it as its own."""

    def __init__(self, path: str | os.PathLike[str], tool: str) -> None:
        self.tool = tool
        super().__init__(path, None, foreign_problem(path, tool))


def read_header_fd(fd: int, path: Path, env: Env) -> SessionHeader:
    """The header of the log open at ``fd`` (``path`` names it in errors):
    CorruptSession for a first line that is no header awl reads, ForeignLog
    for another tool's log."""
    head = bytearray()
    want = 4096  # a header is a few hundred bytes; longer first lines read on
    while len(head) <= MAX_HEADER:
        chunk = env.pread(fd, want, len(head))
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
        tool = foreign_log(obj)
        if tool is not None:
            raise ForeignLog(path, tool)
        if obj.get("type") != "session":
            raise FormatError("the first line is not a session header")
        return parse_header(obj)
    except FormatError as exc:
        # A header of a later format version is whole: a later awl's, not damage.
        version = obj.get("version") if obj.get("type") == "session" else None
        other = type(version) is int and version > FORMAT_VERSION
        raise CorruptSession(path, 1, str(exc), damage=not other) from None


# How long a writer's open waits for a lock whose taker has exited or is being
# killed: a process killed holds its files until the kernel has torn it down (a
# large one for a while), and one killed while it started a tool leaves a child
# that holds the log's descriptor (and so the lock) until its exec closes it.  A
# lock whose taker still runs is a live writer's: the open says busy at once.
LOCK_GRACE = 1.0


def _lock(env: Env, fd: int, path: Path) -> None:
    """Take the writer's lock on ``fd``, or raise SessionBusy (see LOCK_GRACE)."""
    deadline: float | None = None
    pause = 0.002
    while True:
        try:
            env.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            now = time.monotonic()
            if deadline is None:
                takers = _takers(fd)
                if takers is not None and os.getpid() in takers:
                    # This process's own writer (another manager, another thread).
                    raise SessionBusy(path, here=True) from None
                if takers is not None and any(pid > 0 and _running(pid) for pid in takers):
                    raise SessionBusy(path) from None
                deadline = now + LOCK_GRACE
            if now >= deadline:
                raise SessionBusy(path) from None
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _takers(fd: int) -> list[int] | None:
    """The processes holding a lock on ``fd``'s file, as ``/proc/locks`` tells (Linux;
    0 or -1 for one in another pid namespace, which cannot be told); None when it
    cannot tell (the lock's grace is short)."""
    try:
        ino = os.fstat(fd).st_ino
        with open("/proc/locks", "rb") as fh:
            table = fh.read()
    except OSError:
        return None
    # By inode alone: btrfs and overlayfs show another device there than stat does.
    # A lock on another file with this inode (another file system) only costs the
    # wait, or says busy as every open used to.
    suffix = f":{ino}".encode()
    takers: list[int] = []
    for row in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:2302065 0 EOF"
        cols = row.split()
        if len(cols) >= 6 and cols[1] == b"FLOCK" and cols[5].endswith(suffix):
            try:
                takers.append(int(cols[4]))
            except ValueError:
                continue
    return takers


def _not_awls(folder: Path, st: os.stat_result) -> str | None:
    """Why awl writes no session in ``folder`` (its ``lstat``), or None.  A project's
    folder is awl's, made 0700 by the first session: one that is a link, or
    another user's (planted in a shared session root), could hand the logs to
    someone else.  The root itself may be a link of the user's."""
    if not stat.S_ISLNK(st.st_mode) and st.st_uid == os.geteuid():
        return None
    whose = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "another user's"
    return (
        f"{folder}: the session folder is {whose}; awl writes a session only in a folder of its own"
    )


def creation_problem(path: str | os.PathLike[str]) -> str | None:
    """What creating the log at ``path`` would fail with, in the words the creation
    would say it, told without making anything (a dry run's look); None when
    nothing is seen: a folder that may not be made or written in, a project
    folder that is a link or another user's."""
    log = Path(path)
    folder = log.parent
    missing, above = None, folder
    while not os.path.lexists(above) and above.parent != above:
        missing, above = above, above.parent
    if missing is None:
        try:
            refused = _not_awls(folder, os.lstat(folder))
        except OSError as exc:
            return f"{folder}: cannot create the session folder: {exc.strerror}"
        if refused is not None:
            return refused
    if missing is not None and not os.path.isdir(above):
        # A file where a folder must be (the mkdir under it would say so).
        return f"{missing}: cannot create the session folder: {os.strerror(errno.ENOTDIR)}"
    if os.access(above, os.W_OK | os.X_OK, effective_ids=True):
        return None
    denied = os.strerror(errno.EACCES)
    if missing is not None:
        return f"{missing}: cannot create the session folder: {denied}"
    return f"{log}: cannot create session file: {denied}"


_WRITER_FLAGS = os.O_CLOEXEC | os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW


def _writer_refused(path: Path, exc: OSError, env: Env) -> SessionError:
    """What a writer's open of the log at ``path`` that failed with ``exc`` says (with
    its error number: a bulk import stops at a read-only mount)."""
    if exc.errno == errno.ELOOP:
        refused = SessionError(symlink_refusal(path))
    elif exc.errno in _NOT_WRITABLE and _readable(path, env):
        # Another user's log, a read-only mount: say what still works.
        refused = SessionError(
            f"{path}: cannot open for writing: {exc.strerror} (reading works: awl show)"
        )
    else:
        refused = SessionError(f"{path}: cannot open: {exc.strerror}")
    refused.errno = exc.errno
    return refused


def writing_problem(path: str | os.PathLike[str], env: Env | None = None) -> SessionError | None:
    """The error a writer's open of the existing log at ``path`` would raise for the
    file itself (one it may not write, a symbolic link), in its words, or None:
    told by an open that writes nothing and takes no lock (a dry run's look;
    a lock held is :func:`held_by_writer`'s)."""
    env = env or default_env()
    try:
        fd = open_regular(env, Path(path), _WRITER_FLAGS)
    except FileNotFoundError:
        return None  # gone meanwhile: a creation's, then
    except OSError as exc:
        return _writer_refused(Path(path), exc, env)
    except SessionError as exc:
        return exc  # not a regular file
    env.close(fd)
    return None


def held_by_writer(path: str | os.PathLike[str]) -> bool:
    """Whether a writer's lock on the log at ``path`` is held by a process that runs
    (or by one this process cannot see, in another pid namespace), as
    ``/proc/locks`` tells (Linux; False when it cannot tell): what a writer's
    open would find busy, told without taking the lock, which would make a
    writer that starts meanwhile find it busy itself (a dry run's look)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        takers = _takers(fd)
    finally:
        os.close(fd)
    return takers is not None and any(pid <= 0 or _running(pid) for pid in takers)


_PF_EXITING = 0x4  # the kernel's flag of a process being torn down (include/linux/sched.h)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that is not exiting: a zombie, or one a SIGKILL
    is tearing down (still in state R, its files not yet closed), has exited."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    # The fields after the command's closing parenthesis (which may hold spaces):
    # state ppid pgrp session tty_nr tpgid flags ...
    fields = stat[stat.rfind(b")") + 1 :].split()
    if len(fields) < 7 or fields[0] in (b"Z", b"X"):
        return False
    try:
        if int(fields[6]) & _PF_EXITING:
            return False
    except ValueError:
        return True
    return not _kill_pending(pid)


def _kill_pending(pid: int) -> bool:
    """Whether a SIGKILL waits for ``pid`` (sent, not yet acted on: it is as good as gone)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            status = fh.read()
    except OSError:
        return True
    kill = 1 << (signal.SIGKILL - 1)
    for row in status.splitlines():
        if row.startswith((b"ShdPnd:", b"SigPnd:")):
            try:
                if int(row.split()[1], 16) & kill:
                    return True
            except (IndexError, ValueError):
                continue
    return False


class LogFile:
    """An open log: made by :meth:`open` or :meth:`create`, ended by :meth:`close`.

    ``size`` is the bytes that count: a torn tail an open found is not
    among them, before and after :meth:`trim`.
    """

    def __init__(
        self, path: Path, header: SessionHeader, fd: int, env: Env, *, read_only: bool
    ) -> None:
        self.path = path
        self.header = header
        self.env = env
        self.read_only = read_only
        self.fd: int | None = fd
        self.size = 0
        self.needs_newline = False  # the last line has no newline: the next append adds one
        self.broken = False  # a failed append could not be cut back
        self.changed: str | None = None  # how another program changed the file, once seen
        self._map: LogMap | None = None
        self._locked = False  # a reader that took the writers' lock (see open)
        # The hidden name of a log created but not yet placed (see create).
        self._unplaced: Path | None = None
        # The name whose file this is, whatever the process's directory becomes
        # (not normalized: "link/.." is where the link leads, as the open took it).
        with contextlib.suppress(OSError):
            path = path.absolute()
        self._name = path

    # ── opening ──

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        read_only: bool,
        env: Env,
        lock: bool = False,
        header: SessionHeader | None = None,
    ) -> LogFile:
        """Open the log at ``path`` and read its header.

        A writer takes the lock (:class:`SessionBusy` if another process has
        it) and refuses a symbolic link; a reader takes no lock, unless
        ``lock`` asks for it (one that renames the log when done, which no
        writer may have open meanwhile).  ``header``, when given, stands for
        the first line, which is not read (a salvage of a log whose header is
        damaged names the session from its file name).
        """
        flags = (os.O_CLOEXEC | os.O_RDONLY) if read_only else _WRITER_FLAGS
        try:
            fd = open_regular(env, path, flags)
        except FileNotFoundError as exc:
            raise SessionNotFound(missing_text(path, exc, "no such session file")) from None
        except OSError as exc:
            if read_only:
                raise SessionError(f"{path}: cannot open: {exc.strerror}") from None
            raise _writer_refused(path, exc, env) from None
        try:
            if lock or not read_only:
                _lock(env, fd, path)
            if header is None:
                header = read_header_fd(fd, path, env)
            log = cls(path, header, fd, env, read_only=read_only)
            log._locked = lock
            log.size = env.fstat(fd).st_size
        except BaseException:
            env.close(fd)
            raise
        return log

    @classmethod
    def create(
        cls,
        path: Path,
        header: SessionHeader,
        body: Iterable[bytes],
        env: Env,
        *,
        place: bool = True,
    ) -> LogFile:
        """Create the log at ``path`` holding ``header`` then the lines of ``body``.

        Written under a hidden name, synced and renamed into place without
        replacing a file; on any failure nothing is left.  Raises
        SessionWriteError.  Serialized first: a header that cannot be
        written leaves no file.  ``place=False`` stops after the write: the
        sync and the rename are left to :meth:`place`, which any later use
        of the log (and :meth:`close`) calls first.
        """
        data = b"".join([serialize_header(header), *body])  # one copy of a large body
        try:
            make_private_dirs(env, path.parent)
            folder = os.lstat(path.parent)
        except OSError as exc:
            raise SessionWriteError(
                f"{exc.filename or path.parent}: cannot create the session folder: {exc.strerror}",
                errno=exc.errno,
            ) from None
        refused = _not_awls(path.parent, folder)
        if refused is not None:
            raise SessionWriteError(refused)
        tmp = creating_path(path, os.getpid())
        # Not truncated at the open: the hidden name may be another writer's of this
        # process whose log is not yet placed (its lock says so), to be left whole.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = env.open(tmp, flags, 0o600)
        except OSError as exc:
            raise SessionWriteError(
                f"{path}: cannot create session file: {exc.strerror}", errno=exc.errno
            ) from None
        try:
            env.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException as exc:
            env.close(fd)
            if isinstance(exc, BlockingIOError):
                raise SessionWriteError(
                    f"{path}: another writer is creating this session"
                ) from None
            if isinstance(exc, OSError):
                raise SessionWriteError(
                    f"{path}: cannot create session file: {exc.strerror}", errno=exc.errno
                ) from None
            raise
        log = cls(path, header, fd, env, read_only=False)
        log._unplaced = tmp
        try:
            env.ftruncate(fd, 0)  # what a dead process of the same pid left there
            env.fchmod(fd, 0o600)
            write_all(env, fd, data)
        except BaseException as exc:
            log._abandon(exc)
        log.size = len(data)
        if place:
            log.place()
        return log

    def place(self) -> None:
        """Sync a log :meth:`create` left unplaced and give it its name (nothing for
        any other): from then on it exists for other processes, and survives a
        crash.  On failure nothing of it is left, the descriptor is closed and
        SessionWriteError raised."""
        tmp, self._unplaced = self._unplaced, None
        if tmp is None:
            return
        assert self.fd is not None
        try:
            self.env.fsync(self.fd)
            self.env.rename_noreplace(tmp, self.path)  # never replaces a log
            self.env.sync_dir(self.path.parent)
        except BaseException as exc:
            self._unplaced = tmp
            self._abandon(exc)

    @property
    def hidden_path(self) -> Path | None:
        """Where a log :meth:`create` left unplaced is until :meth:`place` names it
        (None once placed): a reader that must look at it first reads it there."""
        return self._unplaced

    def abandon(self, exc: BaseException) -> NoReturn:
        """Remove a log :meth:`create` left unplaced (found wanting before it is
        placed), then raise ``exc``."""
        self._abandon(exc)

    @property
    def placed(self) -> bool:
        """Whether the log is under its name (False between ``create(place=False)``
        and :meth:`place`)."""
        return self._unplaced is None

    def _abandon(self, exc: BaseException) -> NoReturn:
        """A new log that could not be made whole: closed and removed (under both its
        names: one that is not durable is not claimed to exist), then ``exc`` raised
        (an OSError as SessionWriteError)."""
        tmp = self._unplaced
        assert tmp is not None and self.fd is not None
        fd, self.fd, self._unplaced = self.fd, None, None
        # Also on KeyboardInterrupt: no locked, half-made file outlives the
        # attempt in this process.
        try:
            placed = os.path.samestat(os.stat(self.path, follow_symlinks=False), os.fstat(fd))
        except OSError:
            placed = False
        self.close_map()
        self.env.close(fd)
        with contextlib.suppress(OSError):
            self.env.unlink(tmp)
        if placed:
            with contextlib.suppress(OSError):
                self.env.unlink(self.path)
        if isinstance(exc, OSError):
            raise SessionWriteError(
                f"{self.path}: could not write session: {exc.strerror}", errno=exc.errno
            ) from None
        raise exc

    # ── reading ──

    def map(self) -> LogMap:
        """The log's bytes up to :attr:`size` (mapped again after appends)."""
        self.place()
        if self._map is None or len(self._map) < self.size:
            assert self.fd is not None
            if self.read_only:
                # Every line but the last is mapped: see awl.store._logmap.  (A
                # locked reader's map shares its lock: close() undoes the lock itself.)
                self._map = LogMap.for_reader(self.fd, self.size, self.path)
            else:
                # mmap keeps a dup of the descriptor it maps, and a dup shares
                # the flock: map through a descriptor of its own so that the
                # lock ends with close() whatever happens to the mapping.
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                rfd = self.env.open(self.path, flags)
                try:
                    a, b = self.env.fstat(rfd), self.env.fstat(self.fd)
                    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                        raise SessionError(f"{self.path}: the file was replaced while open")
                    self._map = LogMap.whole(rfd, self.size)
                finally:
                    self.env.close(rfd)
        return self._map

    # ── writing ──

    def check_writable(self) -> None:
        """Raise SessionError unless this log can take an append."""
        if self.fd is None:
            raise SessionError(f"{self.path}: session is closed")
        if self.read_only:
            raise SessionError(f"{self.path}: session is open read-only")
        if self.broken:
            raise SessionWriteError(
                f"{self.path}: a failed write could not be undone; "
                "reopen the session (the torn line is trimmed then)"
            )
        if self.changed is not None:
            # A removed or moved log cannot be resumed by its name; a replaced one
            # (an editor's save) can; each says what is left to do.
            if os.path.lexists(self.path):
                then = " (resume the session to go on)"
            elif self.changed.startswith("another program moved"):
                then = " (resume it by its new path to go on)"
            else:
                then = " (nothing is left of it to go on from: quit and start a new session)"
            raise SessionWriteError(
                f"{self.path}: {self.changed} while awl had it open; awl writes "
                f"nothing more to it{then}"
            )

    def notice_change(self) -> bool:
        """Whether the file is no longer as this writer left it (then :attr:`changed`
        says how, and appends are refused).

        Another program that ignores the lock may append to the log, cut it,
        or replace it (an editor's save).  Appending after it would glue an
        entry to a line without its newline, record wrong offsets, or write
        to a file no longer at the log's name; reading the mapped pages of a
        cut log would kill the process (SIGBUS).  So the writer stops
        writing, and says why.  An fstat and a stat of its name: nothing beside
        an append's fsync.
        """
        assert self.fd is not None
        if self.changed is None:
            now = self.env.fstat(self.fd)
            if now.st_nlink == 0:  # its name now names another file, or none
                self.changed = "another program removed or replaced the log file"
            elif now.st_size > self.size:
                grown = now.st_size - self.size
                self.changed = f"another program appended {_count_of(grown, 'byte')} to the log"
            elif now.st_size < self.size:
                cut = self.size - now.st_size
                self.changed = f"another program cut {_count_of(cut, 'byte')} off the log"
            elif not self._named(now):
                # Still linked, but elsewhere: the file or a folder above it renamed.
                self.changed = "another program moved the log file (or a folder above it)"
        return self.changed is not None

    def _named(self, now: os.stat_result) -> bool:
        """Whether the log's name still leads to the open file."""
        try:
            there = self.env.stat(self._name)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return (there.st_dev, there.st_ino) == (now.st_dev, now.st_ino)

    def _check_unchanged(self) -> None:
        """Raise SessionWriteError when :meth:`notice_change` finds a change."""
        try:
            self.notice_change()
        except OSError as exc:
            raise SessionWriteError(
                f"{self.path}: cannot check the log: {exc.strerror}", errno=exc.errno
            ) from None
        self.check_writable()

    def append(self, line: bytes) -> int:
        """Append one line (``\\n`` included) and sync it; returns its offset.

        On failure nothing of it stays (see the module's docstring) and
        SessionWriteError is raised.
        """
        self.check_writable()
        self.place()
        self._check_unchanged()
        assert self.fd is not None
        data = b"\n" + line if self.needs_newline else line
        start = self.size
        try:
            write_all(self.env, self.fd, data)
            self.env.fsync(self.fd)
        except OSError as exc:
            # Leave no part of the entry behind.  If even that fails, the torn
            # bytes stay last in the file, where the next open trims them: this
            # log must not take appends after them, so it refuses to go on.
            try:
                self.env.ftruncate(self.fd, start)
            except OSError:
                self.broken = True
            raise SessionWriteError(
                f"{self.path}: could not append entry: {exc.strerror}", errno=exc.errno
            ) from None
        self.needs_newline = False
        self.size = start + len(data)
        return self.size - len(line)

    def trim(self, start: int, end: int) -> None:
        """Move a torn last line ``[start, end)`` to ``<log>.corrupt``, then cut it off.

        The log is not touched unless the bytes are durable there; raises
        SessionWriteError when they cannot be kept or the log not cut.
        """
        assert self.fd is not None and not self.read_only
        self.place()
        self.close_map()  # the mapping would reach past the new end of file
        target = corrupt_path(self.path)
        try:
            keep_bytes(self.env, target, self.fd, start, end)
        except OSError as exc:
            raise SessionWriteError(cannot_keep(target, exc), errno=exc.errno) from None
        try:
            self.env.ftruncate(self.fd, start)
            self.env.fsync(self.fd)
        except OSError as exc:
            raise SessionWriteError(
                f"{self.path}: cannot trim the torn last line ({exc.strerror}); "
                f"its bytes are also in {target}",
                errno=exc.errno,
            ) from None

    # ── closing ──

    def close_map(self) -> None:
        """Unmap the log (it is mapped again when next read)."""
        if self._map is not None:
            self._map.close()
            self._map = None

    def close(self) -> None:
        """Place the log if it is not yet (see :meth:`place`, which may raise
        SessionWriteError), unmap and close (which releases the lock)."""
        if self.fd is not None:
            self.place()
        self.close_map()
        if self.fd is not None:
            fd, self.fd = self.fd, None
            if self._locked:
                # mmap's dup of the descriptor shares the lock, and a view of the map
                # still held somewhere (a traceback's frame) keeps the dup open:
                # unlocked here, the lock ends with the reader whatever holds it.
                with contextlib.suppress(OSError):
                    self.env.flock(fd, fcntl.LOCK_UN)
            self.env.close(fd)

    def forget(self) -> None:
        """Close the descriptor without the Env (a manager the garbage collector ends);
        a log never placed is removed (it was never claimed to exist)."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with contextlib.suppress(OSError):
                os.close(fd)
            if self._unplaced is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self._unplaced)


def _readable(path: Path, env: Env) -> bool:
    try:
        env.close(open_regular(env, path))
    except (OSError, SessionError):
        return False
    return True


def read_header(path: str | os.PathLike[str], env: Env | None = None) -> SessionHeader:
    """The header of a log, reading only its first line."""
    e = env or default_env()
    p = Path(path)
    try:
        fd = open_regular(e, p)
    except OSError as exc:
        raise SessionError(f"{p}: cannot open: {exc.strerror}") from None
    try:
        return read_header_fd(fd, p, e)
    finally:
        e.close(fd)


def _count_of(n: int, unit: str) -> str:
    """``1 byte``, ``2 bytes``: a count with its unit, singular for one."""
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"
