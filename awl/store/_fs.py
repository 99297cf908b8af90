"""The store's one seam to the file system: every call that changes a file, or
that can fail in a way the store must handle, goes through an :class:`Env`.

Tests put faults here (a full disk, an I/O error, a kill at a given call)
instead of patching a module's ``os``, and the store's durability rules are
written once, as functions over an Env:

- a new name is made durable by fsyncing the folder that holds it
  (:meth:`Env.sync_dir`) before awl relies on it: each folder
  :func:`make_private_dirs` creates, a log renamed into place, a
  ``.corrupt`` file created by :func:`keep_bytes`;
- bytes are written whole or the file is cut back (:func:`write_all` loops
  on short writes; the callers roll back);
- nothing is ever written through a symbolic link or into anything but a
  regular file, and no open blocks on a FIFO (:func:`open_regular`).

Reads of a log's bytes go through memory maps (:mod:`._logmap`), which no
Env sees: a read fault there is a SIGBUS, not an error to handle.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..environment import fsync_enabled
from ..errors import SessionError

__all__ = [
    "Env",
    "default_env",
    "keep_bytes",
    "make_private_dirs",
    "open_regular",
    "use_env",
    "write_all",
]

PathLike = str | os.PathLike[str]


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


class Env:
    """The file-system calls of the store, each a thin wrapper of its ``os`` call.

    Subclass it and override a method to inject a fault; hand the instance
    to :meth:`awl.store.SessionManager.open` (``env=``), or make it the
    process's default with :func:`use_env`.  ``renameat2=False`` makes
    :meth:`rename_noreplace` use ``link`` and ``unlink`` as it does where
    the kernel lacks ``renameat2``.
    """

    def __init__(self, *, renameat2: bool = True) -> None:
        self.renameat2 = renameat2

    @property
    def renames_atomically(self) -> bool:
        """Whether :meth:`rename_noreplace` is one ``renameat2`` call here."""
        return self.renameat2 and _renameat2() is not None

    # ── descriptors ──

    def open(self, path: PathLike, flags: int, mode: int = 0o600) -> int:
        """``os.open``."""
        return os.open(path, flags, mode)

    def close(self, fd: int) -> None:
        """``os.close``."""
        os.close(fd)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """``os.write``: may write less than asked (see :func:`write_all`)."""
        return os.write(fd, data)

    def pread(self, fd: int, n: int, offset: int) -> bytes:
        """``os.pread``."""
        return os.pread(fd, n, offset)

    def fsync(self, fd: int) -> None:
        """``os.fsync``, unless ``AWL_FSYNC=0`` turned syncing off."""
        if fsync_enabled():
            os.fsync(fd)

    def ftruncate(self, fd: int, length: int) -> None:
        """``os.ftruncate``."""
        os.ftruncate(fd, length)

    def fstat(self, fd: int) -> os.stat_result:
        """``os.fstat``."""
        return os.fstat(fd)

    def stat(self, path: PathLike) -> os.stat_result:
        """``os.stat`` (through symbolic links, as an open goes)."""
        return os.stat(path)

    def fchmod(self, fd: int, mode: int) -> None:
        """``os.fchmod``."""
        os.fchmod(fd, mode)

    def flock(self, fd: int, operation: int) -> None:
        """``fcntl.flock``: BlockingIOError when LOCK_NB finds it taken."""
        fcntl.flock(fd, operation)

    # ── names ──

    def mkdir(self, path: PathLike, mode: int) -> None:
        """``os.mkdir``."""
        os.mkdir(path, mode)

    def chmod(self, path: PathLike, mode: int) -> None:
        """``os.chmod``."""
        os.chmod(path, mode)

    def unlink(self, path: PathLike) -> None:
        """``os.unlink``."""
        os.unlink(path)

    def link(self, src: PathLike, dst: PathLike) -> None:
        """``os.link``: never replaces ``dst``."""
        os.link(src, dst)

    def replace(self, src: PathLike, dst: PathLike) -> None:
        """``os.replace`` (index caches only: a log is never replaced)."""
        os.replace(src, dst)

    def renameat2_noreplace(self, src: PathLike, dst: PathLike) -> None:
        """``renameat2(RENAME_NOREPLACE)``: OSError as the kernel answers it
        (FileExistsError when ``dst`` exists; ENOSYS where libc lacks the call)."""
        fn = _renameat2()
        if fn is None:
            raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS), os.fspath(src))
        if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE):
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), os.fspath(src), None, os.fspath(dst))

    def rename_noreplace(self, src: PathLike, dst: PathLike) -> None:
        """Give ``src`` the name ``dst`` unless ``dst`` exists (then FileExistsError).

        One atomic :meth:`renameat2_noreplace` where the kernel and file
        system have it, so a crash leaves one name or the other, never both.
        Elsewhere :meth:`link` then :meth:`unlink`: a crash between the two
        leaves both names, which ``awl reindex`` settles.
        """
        if self.renameat2:
            try:
                self.renameat2_noreplace(src, dst)
                return
            except FileExistsError:
                raise
            except OSError:
                # No support, a sandbox refusing the call...: link and unlink
                # give the real error if there is one.
                pass
        self.link(src, dst)  # fails if the name exists: never replaces a file
        self.unlink(src)

    def sync_dir(self, folder: PathLike) -> None:
        """fsync a folder, so that a name just linked into it or removed is durable
        (nothing unless syncing is on)."""
        if not fsync_enabled():
            return
        dfd = self.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.fsync(dfd)
        finally:
            self.close(dfd)


_default = Env()


def default_env() -> Env:
    """The Env the store uses when none is given."""
    return _default


@contextlib.contextmanager
def use_env(env: Env) -> Iterator[Env]:
    """Make ``env`` the process's default inside the ``with`` block (for tests:
    a fault in a child process, whatever creates its managers)."""
    global _default
    saved, _default = _default, env
    try:
        yield env
    finally:
        _default = saved


def first_names(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, os.stat_result | None]]:
    """Each file of ``paths`` once, under the first of its names in sorted order,
    with its stat: a file's second name (a hard link) is the same log, not a
    copy of it.  A path that cannot be stat'ed is kept, with None (whatever
    reads it next says why)."""
    seen: set[tuple[int, int]] = set()
    out: list[tuple[str, os.stat_result | None]] = []
    for p in sorted({os.fspath(p) for p in paths}):
        try:
            st = os.stat(p)
        except (OSError, ValueError):  # ValueError: a NUL in the name
            out.append((p, None))
            continue
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            out.append((p, st))
    return out


def write_all(env: Env, fd: int, data: bytes | memoryview) -> None:
    """Write every byte of ``data``, looping on short writes (OSError on failure)."""
    view = memoryview(data)
    while view:
        n = env.write(fd, view)
        view = view[n:]


def open_regular(env: Env, path: PathLike, flags: int = os.O_RDONLY) -> int:
    """Open a file, refusing anything but a regular file without blocking on it.

    O_NONBLOCK keeps a FIFO named like a log from hanging the open; it is
    cleared again once the file is known to be regular.  A folder is "not a
    regular file" whether it is opened for reading (which succeeds) or for
    writing (EISDIR), so every command names it the same way.
    """
    try:
        fd = env.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise SessionError(f"{os.fspath(path)}: not a regular file") from None
    try:
        if not stat.S_ISREG(env.fstat(fd).st_mode):
            raise SessionError(f"{os.fspath(path)}: not a regular file")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        env.close(fd)
        raise
    return fd


def make_private_dirs(env: Env, path: Path) -> None:
    """Create ``path`` and its missing parents as 0700, whatever the umask, each
    new folder's name synced in its parent before the next is made in it."""
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            env.mkdir(d, 0o700)
        except FileExistsError:
            continue
        env.chmod(d, 0o700)
        env.sync_dir(d.parent)


def check_keep_target(st: os.stat_result, source: os.stat_result | None, target: Path) -> None:
    """OSError unless ``target`` (its ``st``) may receive bytes kept from ``source``."""
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(target))
    if source is not None and os.path.samestat(st, source):
        # Appended there, the bytes would be cut off again with the tail.
        raise OSError(errno.EINVAL, "it is a hard link to the log itself", str(target))


_PIECE = 1 << 20  # bytes copied or compared at a time: a torn tail can be large


def keep_bytes(env: Env, target: Path, source: int, start: int, end: int) -> None:
    """Append bytes ``[start, end)`` of the file open at ``source`` to ``target``
    (created 0600) and make them durable: where bytes that cannot stay in a
    log are kept (``<file>.corrupt``).  Memory holds a megabyte at a time.

    Each piece kept starts a line of its own (a newline is written first when
    ``target`` does not end in one).  Keeping is idempotent: when ``target``
    already ends with exactly this piece (a repair interrupted after keeping
    its bytes and before cutting them off the log), nothing is added; when
    its last line is a start of this piece (a repair killed while it copied),
    that line is replaced by the whole piece, which holds it.  A
    ``target`` this call creates has its name synced in its folder.
    ``target`` must not be ``source`` itself (a hard link).  Raises OSError;
    on failure ``target`` is cut back to what it held (one this call created
    is removed).
    """
    if end <= start:
        return
    # Read-write and non-blocking: a FIFO there opens at once (a write-only
    # open would wait for a reader) and is refused below.
    flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    created = False
    try:
        cfd = env.open(target, flags)
    except FileNotFoundError:
        cfd = env.open(target, flags | os.O_CREAT | os.O_EXCL, 0o600)
        created = True
    length = end - start
    try:
        st = env.fstat(cfd)
        check_keep_target(st, env.fstat(source), target)
        kept = st.st_size
        if kept >= length and _ends_with(env, cfd, kept, source, start, end):
            return  # kept already: the earlier repair died before the cut
        begun = _begun(env, cfd, kept, source, start, end)
        try:
            if begun is not None:
                env.ftruncate(cfd, begun)  # a copy cut short: made whole below
                kept = begun
            env.fchmod(cfd, 0o600)
            if kept and env.pread(cfd, 1, kept - 1) != b"\n":
                write_all(env, cfd, b"\n")  # two torn tails stay told apart
            pos = start
            while pos < end:
                chunk = env.pread(source, min(_PIECE, end - pos), pos)
                if not chunk:
                    raise OSError(errno.EIO, "the file changed while its bytes were kept")
                write_all(env, cfd, chunk)
                pos += len(chunk)
            env.fsync(cfd)
        except OSError:
            with contextlib.suppress(OSError):
                env.ftruncate(cfd, kept)
            raise
    except OSError:
        if created:  # nothing kept: no empty file left to puzzle over
            with contextlib.suppress(OSError):
                env.unlink(target)
        raise
    finally:
        env.close(cfd)
    if created:
        env.sync_dir(target.parent)


def _begun(env: Env, fd: int, size: int, source: int, start: int, end: int) -> int | None:
    """Where ``fd``'s last line starts when it is a start (not all) of ``source``'s
    ``[start, end)``: a copy of it a killed repair began; else None."""
    length = end - start
    at = size  # the last line's start, found going back at most ``length`` bytes
    while at > 0 and size - at < length:
        lo = max(0, at - _PIECE, size - length)
        cut = env.pread(fd, at - lo, lo).rfind(b"\n")
        if cut >= 0:
            at = lo + cut + 1
            break
        at = lo
    if not 0 < size - at < length or (at and env.pread(fd, 1, at - 1) != b"\n"):
        return None
    return at if _same(env, fd, at, source, start, size - at) else None


def _ends_with(env: Env, fd: int, size: int, source: int, start: int, end: int) -> bool:
    """Whether ``fd``'s last bytes are ``source``'s ``[start, end)``, starting a line
    (or the file)."""
    at = size - (end - start)
    if at and env.pread(fd, 1, at - 1) != b"\n":
        return False
    return _same(env, fd, at, source, start, end - start)


def _same(env: Env, fd: int, at: int, source: int, start: int, length: int) -> bool:
    """Whether ``fd``'s ``length`` bytes from ``at`` are ``source``'s from ``start``
    (compared a piece at a time)."""
    done = 0
    while done < length:
        mine = env.pread(fd, min(_PIECE, length - done), at + done)
        if not mine or mine != env.pread(source, len(mine), start + done):
            return False
        done += len(mine)
    return True
