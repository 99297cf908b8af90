"""Session listings: one line per log, from its header and its last checkpoint.

A listing must cost the same for a 300 MB log as for a 3 KB one, and a
thousand of them must list faster than a person notices.  So a log is not
opened as a session here: two reads of its ends (one for a small log) give
the header and the last line; when that last line is a checkpoint that fits
the log, it holds everything a listing shows.  A small log that has no
checkpoint (the 1% budget keeps them off logs under about 100 KB) is read whole
and its few lines parsed.  Anything else — a torn tail, entries after the
checkpoint, an unusual entry, any doubt — is answered by opening the log
read-only as :class:`awl.store.SessionManager` does, which is the
authority: the quick path only ever gives the answer that open would give.

Nothing here imports numpy or the index, so ``awl sessions`` starts fast.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..conversation import ROLES
from ..errors import FormatError, SessionError
from ..paths import (
    SESSION_FILE_RE,
    log_files,
    missing_text,
    project_dir,
    project_folders,
    recorded_cwd,
    session_root,
)
from . import _native_loader
from ._checkpoint import checkpoint_fits, checkpoint_locates
from ._clock import format_timestamp
from ._codec import parse_checkpoint, parse_header, parse_object
from ._entries import MessageEntry, SessionHeader
from ._state import prompt_words

SMALL_LOG = 256 * 1024
"""A log up to this size without a checkpoint at its end is read whole and parsed."""

_HEAD_READ = 4096  # a header is a few hundred bytes
_TAIL_READ = 8192  # a checkpoint line is one to two kilobytes


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One line of a session listing.

    ``error`` is set, and the counts are zero, for a log that cannot be read.
    """

    path: Path
    id: str
    cwd: str
    created: str
    modified: str
    message_count: int
    first_prompt: str = ""
    last_activity: str = ""
    size: int = 0
    error: str | None = None
    imported_from: str = ""  # the source's format ("pi", "claude", "codex") of an import
    # An imported session its tool ran for another (a Codex review): its kind. Not
    # one that a resume without an id picks.
    subagent: str = ""

    def as_json(self) -> dict[str, Any]:
        """The line as a JSON object (``awl sessions --json``)."""
        return {
            "id": self.id,
            "path": str(self.path),
            "cwd": self.cwd,
            "created": self.created,
            "modified": self.modified,
            "lastActivity": self.last_activity,
            "messageCount": self.message_count,
            "firstPrompt": self.first_prompt,
            "size": self.size,
            "error": self.error,
            "from": self.imported_from or None,  # as `awl import --from` names it
            "subagent": self.subagent or None,
        }


class _Doubt(Exception):
    """The quick path cannot answer for this log; the full open must."""


def _pread_exact(fd: int, n: int, offset: int) -> bytes:
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise _Doubt  # the file changed under us
    return data


class _Reads:
    """A log's bytes for :func:`awl.store._checkpoint.checkpoint_locates`: from the tail
    already read, else small preads; a long way to read is a doubt."""

    LIMIT = 256 * 1024  # a leaf longer than this: the full open is cheaper
    PAGES = 256  # pages kept: 1 MiB read before the tail is a doubt

    def __init__(self, fd: int, size: int, tail_at: int, tail: bytes) -> None:
        self.fd, self.size, self.tail_at, self.tail = fd, size, tail_at, tail
        self.pages: dict[int, bytes] = {}

    def view(self, start: int, end: int) -> bytes:
        """The bytes ``[start, end)``; raises _Doubt past the file or :attr:`LIMIT`."""
        if start < 0 or end > self.size or start > end:
            raise _Doubt
        if start >= self.tail_at:
            return self.tail[start - self.tail_at : end - self.tail_at]
        if end - start > self.LIMIT:
            raise _Doubt
        if start >> 12 == (end - 1) >> 12:  # the leaf's first bytes: its page
            self.byte(start)
            at = start & ~4095
            return self.pages[start >> 12][start - at : end - at]
        return _pread_exact(self.fd, end - start, start)

    def byte(self, pos: int) -> int:
        """The byte at ``pos``, from a page read once: the boundaries of
        neighbouring lines often share one, and reading 4 KB costs what
        reading 1 byte does."""
        k = pos - self.tail_at
        if k >= 0:
            return self.tail[k]  # IndexError past the end: the caller checked
        page = self.pages.get(pos >> 12)
        if page is None:
            if len(self.pages) >= self.PAGES:
                raise _Doubt  # a long way from the tail: the full open is cheaper
            lo = pos & ~4095
            page = self.pages[pos >> 12] = _pread_exact(self.fd, min(4096, self.size - lo), lo)
        return page[pos & 4095]

    def find(self, sub: bytes, start: int, end: int) -> int:
        """The offset of ``sub`` in ``[start, end)``, or -1; raises _Doubt past the file
        or :attr:`LIMIT` bytes from ``start``.

        A byte is sought page by page, through the pages :meth:`byte` keeps,
        and in the tail where it lies: a caller going line by line to ``end``
        reads each page once, not the rest of the range at every line."""
        if start < 0 or end > self.size or start > end:
            raise _Doubt
        if len(sub) != 1:
            i = self.view(start, end).find(sub)
            return start + i if i >= 0 else -1
        at = start
        while at < end:
            if at >= self.tail_at:
                i = self.tail.find(sub, at - self.tail_at, end - self.tail_at)
                return self.tail_at + i if i >= 0 else -1
            if at - start > self.LIMIT:
                raise _Doubt
            self.byte(at)  # reads its page, once
            lo = at & ~4095
            page = self.pages[at >> 12]
            i = page.find(sub, at - lo, min(end, lo + len(page)) - lo)
            if i >= 0:
                return lo + i
            at = lo + 4096
        return -1


# An imported log's first entry is its import record, which awl writes with
# these keys first (docs/format.md, "Imported sessions").
_IMPORT_RECORD = re.compile(
    rb'\{"type":"x-import","timestamp":"[^"\\]*","importer":[0-9]+,"format":"([a-z]{1,16})"'
    rb'(?:,"subagent":"([^"\\]{1,64})")?'
)


def _imported_from(head: bytes, body: int) -> tuple[str, str]:
    """The source format named by the import record that opens a log, and the kind
    of subagent the source session was ("", "" if none)."""
    m = _IMPORT_RECORD.match(head, body)
    if m is None:
        return "", ""
    return m.group(1).decode(), (m.group(2) or b"").decode("utf-8", "replace")


def _imported_from_log(path: Path) -> tuple[str, str]:
    """:func:`_imported_from` of the log at ``path`` ("", "" when it cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "", ""
    try:
        head = os.pread(fd, _HEAD_READ, 0)
    except OSError:
        return "", ""
    finally:
        os.close(fd)
    nl = head.find(b"\n")
    return _imported_from(head, nl + 1) if nl >= 0 else ("", "")


def _load(line: bytes) -> dict[str, Any]:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise _Doubt from None
    if not isinstance(obj, dict):
        raise _Doubt
    return obj


def _quick_info(path: Path, cwd: str | None) -> SessionInfo:
    """The listing line of a log from its ends; raises _Doubt when unsure."""
    # O_NONBLOCK: a FIFO named like a log must not hang the listing; for a
    # regular file it changes nothing.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return _quick_info_fd(fd, path, cwd)
    finally:
        os.close(fd)


def _quick_info_fd(fd: int, path: Path, cwd: str | None) -> SessionInfo:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _Doubt  # the full open names the problem
    size = st.st_size
    if size <= _HEAD_READ + _TAIL_READ:
        head = tail = _pread_exact(fd, size, 0)
        tail_at = 0
    else:
        head = _pread_exact(fd, _HEAD_READ, 0)
        tail_at = size - _TAIL_READ
        tail = _pread_exact(fd, _TAIL_READ, tail_at)
    nl = head.find(b"\n")
    if nl < 0:
        raise _Doubt
    obj = _load(head[:nl])
    if obj.get("type") != "session":
        raise _Doubt
    try:
        header = parse_header(obj)
    except FormatError:
        raise _Doubt from None
    if cwd is not None and header.cwd != cwd:
        # Rare (two directories whose folder names collide); the full open
        # decides, so a corrupt log here is still shown as unreadable.
        raise _Doubt
    if not tail.endswith(b"\n"):
        raise _Doubt  # a torn or unterminated last line: the open decides
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    body = nl + 1
    last_at = tail_at + start
    if last_at < body:
        raise _Doubt  # only a header
    # A last line longer than what was read is no checkpoint (those are a
    # kilobyte or two); a small log is then read whole below.
    last = _load(tail[start:-1]) if start or not tail_at else None
    if last is not None and last.get("type") == "checkpoint":
        try:
            cp = parse_checkpoint(last)
        except FormatError:
            raise _Doubt from None
        if not checkpoint_fits(cp, last_at, body, header):
            raise _Doubt
        # The open's checks, on the same bytes: a checkpoint it would not
        # believe must not be believed here either.
        if not checkpoint_locates(cp, _Reads(fd, size, tail_at, tail), body):
            raise _Doubt
        count, prompt, activity = cp.message_count, cp.first_prompt, cp.last_activity
    elif size > SMALL_LOG:
        raise _Doubt
    else:
        data = tail if tail_at == 0 else _pread_exact(fd, size, 0)
        native = _native()
        if native is not None:
            count, prompt, activity = _replay_small_native(native, data, body, header)
        else:
            count, prompt, activity = _replay_small(data, body, header)
    fmt, subagent = _imported_from(head, body)
    return SessionInfo(
        path=path,
        id=header.id,
        cwd=header.cwd,
        created=header.timestamp,
        modified=format_timestamp(st.st_mtime),
        message_count=count,
        first_prompt=prompt,
        last_activity=activity,
        size=size,
        imported_from=fmt,
        subagent=subagent,
    )


def _entry(obj: dict[str, Any]) -> MessageEntry:
    try:
        entry = parse_object(obj)
    except FormatError:
        raise _Doubt from None
    if not isinstance(entry, MessageEntry):
        raise _Doubt
    return entry


def _native() -> Any:
    """The compiled scanner module (no numpy needed), or None: disabled or not built."""
    return _native_loader.load()[0]  # awl.scanner warns if it is not built


def _summary(
    parents: list[int],
    user: list[bool],
    load: Callable[[int], dict[str, Any]],
    header: SessionHeader,
) -> tuple[int, str, str]:
    """(message count, first prompt, last activity) from the tree of a small log.

    ``load(i)`` gives entry ``i`` as an object.  Only what the full open
    parses is parsed, so that a bad entry there is left to it: the first
    prompt's message, and the leaf only when its timestamp is not a string.
    """
    if not parents:
        return 0, "", header.timestamp
    branch: list[int] = []
    pos = len(parents) - 1
    while pos != -1:
        branch.append(pos)
        pos = parents[pos]
    branch.reverse()
    prompt = ""
    for i in branch:
        if user[i]:
            prompt = prompt_words(_entry(load(i)).message)
            if prompt:
                break
    leaf = load(branch[-1])
    when = leaf.get("timestamp")
    if not isinstance(when, str):
        when = _entry(leaf).base.timestamp
    return len(branch), prompt, when or header.timestamp


def _replay_small_native(
    native: Any, data: bytes, body: int, header: SessionHeader
) -> tuple[int, str, str]:
    """:func:`_replay_small` with the tree fields from the C scanner: only the
    entries that must be parsed are."""
    ffi, lib = native.ffi, native.lib
    end = len(data)
    cap = data.count(b"\n", body)
    recs = ffi.new("awl_record[]", max(cap, 1))
    next_pos = ffi.new("size_t *")
    with ffi.from_buffer("uint8_t[]", data) as buf:
        n = lib.awl_scan(buf, end, body, end, recs, cap, next_pos)
    if n != cap or next_pos[0] != end:
        raise _Doubt
    need = lib.AWL_FLAG_ID | lib.AWL_FLAG_ID_HEX | lib.AWL_FLAG_PARENT
    roles = (lib.AWL_ROLE_SYSTEM, lib.AWL_ROLE_USER, lib.AWL_ROLE_ASSISTANT)
    message, slow = lib.AWL_KIND_MESSAGE, lib.AWL_FLAG_SLOW
    parent_null, parent_hex = lib.AWL_FLAG_PARENT_NULL, lib.AWL_FLAG_PARENT_HEX
    index_of: dict[int, int] = {}
    parents: list[int] = []
    user: list[bool] = []
    spans: list[tuple[int, int]] = []
    for i in range(n):
        r = recs[i]
        flags = r.flags
        if (
            r.kind != message
            or flags & slow
            or flags & need != need
            or r.role not in roles
            or r.id in index_of
        ):
            raise _Doubt  # other entry types, odd ids, bad lines: the full open
        if flags & parent_null:
            parents.append(-1)
        elif flags & parent_hex and r.parent in index_of:
            parents.append(index_of[r.parent])
        else:
            raise _Doubt
        index_of[r.id] = i
        user.append(r.role == lib.AWL_ROLE_USER)
        spans.append((r.offset, r.length))

    def load(i: int) -> dict[str, Any]:
        off, length = spans[i]
        return _load(data[off : off + length])

    return _summary(parents, user, load, header)


def _replay_small(data: bytes, body: int, header: SessionHeader) -> tuple[int, str, str]:
    """(message count, first prompt, last activity) of a small log of plain messages.

    Only a log of well-formed message lines, every parent before its child,
    is answered here; a checkpoint, another entry type, a blank line or any
    structural problem leaves it to the full open.
    """
    objs: list[dict[str, Any]] = []
    parents: list[int] = []  # index in objs of each entry's parent, -1 for a root
    index_of: dict[str, int] = {}
    for line in data[body:-1].split(b"\n"):
        obj = _load(line)
        if obj.get("type") != "message" or "parentId" not in obj:
            raise _Doubt
        eid = obj.get("id")
        parent = obj["parentId"]
        msg = obj.get("message")
        if (
            not isinstance(eid, str)
            or not eid
            or eid in index_of
            or not isinstance(msg, dict)
            or msg.get("role") not in ROLES
        ):
            raise _Doubt
        if parent is None:
            parents.append(-1)
        elif isinstance(parent, str) and parent in index_of:
            parents.append(index_of[parent])
        else:
            raise _Doubt  # dangling, forward or malformed: the full open reports it
        index_of[eid] = len(objs)
        objs.append(obj)
    user = [o["message"]["role"] == "user" for o in objs]
    return _summary(parents, user, objs.__getitem__, header)


def _full_info(path: Path, cwd: str | None, st: os.stat_result) -> SessionInfo | None:
    modified = format_timestamp(st.st_mtime)
    try:
        # numpy and the index: only for the logs the quick path doubts.
        from ._recovery import read_state

        header, state, size = read_state(path)
    except SessionError as exc:
        sid, created = name_info(path)
        owner = _header_cwd(path)
        if cwd is not None and owner is not None and owner != cwd:
            # Damaged, but its intact header says whose it is: another directory's
            # that shares this folder (its damage is not this directory's).
            return None
        where = owner if owner is not None else cwd or ""
        return SessionInfo(path, sid, where, created, modified, 0, size=st.st_size, error=str(exc))
    if cwd is not None and header.cwd != cwd:
        return None
    fmt, subagent = _imported_from_log(path)
    return SessionInfo(
        path=path,
        id=header.id,
        cwd=header.cwd,
        created=header.timestamp,
        modified=modified,
        message_count=state.message_count,
        first_prompt=state.first_prompt,
        last_activity=state.last_activity,
        size=size,
        imported_from=fmt,
        subagent=subagent,
    )


def _header_cwd(path: Path) -> str | None:
    """The cwd a log's first line records, when that line is a whole header this
    version reads (a log damaged further on still says whose it is); None
    otherwise."""
    from ._logfile import read_header  # the scanner with it: only for a damaged log

    try:
        return read_header(path).cwd
    except (SessionError, OSError):
        return None


def name_info(path: Path) -> tuple[str, str]:
    """(id, creation time) as a log's file name gives them ("" for a name of another form)."""
    name = SESSION_FILE_RE.match(path.name)
    if not name:
        return path.stem, ""
    ts = name.group("ts")
    return name.group("id"), f"{ts[:10]}T{ts[11:13]}:{ts[14:16]}:{ts[17:19]}.{ts[20:23]}Z"


def session_info(
    path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None
) -> SessionInfo | None:
    """The listing line of one log (None when its header names another cwd than
    ``cwd``, made absolute as a session records it).

    A log that cannot be read gets a line with its ``error``.
    """
    log = Path(path)
    where = recorded_cwd(cwd) if cwd is not None else None
    try:
        return _quick_info(log, where)
    except (_Doubt, OSError):
        pass
    try:
        st = log.stat()
    except OSError as exc:
        # A dangling symlink, a log removed meanwhile: its name still says which.
        sid, created = name_info(log)
        # In the words every command uses (a link to nothing named as one).
        return SessionInfo(log, sid, where or "", created, "", 0, error=missing_text(log, exc))
    return _full_info(log, where, st)


def _sorted(infos: Iterable[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda i: (i.created, i.path.name))


def list_sessions(
    cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
) -> list[SessionInfo]:
    """The sessions whose header cwd is ``cwd``, oldest first (see :func:`session_info`).

    Raises SessionError when the project's folder (or the root above it)
    exists but cannot be listed.
    """
    cwd_text = os.path.abspath(os.fspath(cwd))
    folder = project_dir(cwd_text, session_dir)
    return _sorted(
        info for p in log_files(folder) if (info := session_info(p, cwd_text)) is not None
    )


def list_all_sessions(
    *, session_dir: str | os.PathLike[str] | None = None
) -> dict[str, list[SessionInfo]]:
    """Every project's sessions, grouped by header cwd (sorted), oldest first in each.

    A project folder that cannot be listed is a group of one line with its
    ``error``; a root that cannot be listed raises SessionError.
    """
    root = Path(session_dir) if session_dir is not None else session_root()
    groups: dict[str, list[SessionInfo]] = {}
    for folder in project_folders(root):
        try:
            logs = log_files(folder)
        except SessionError as exc:
            # Shown as one unreadable line; the other projects are listed.
            groups[f"(unreadable, {folder})"] = [
                SessionInfo(folder, folder.name, "", "", "", 0, error=str(exc))
            ]
            continue
        for p in logs:
            info = session_info(p, None)
            if info is not None:
                groups.setdefault(info.cwd or f"(unreadable, in {folder})", []).append(info)
    return {cwd: _sorted(infos) for cwd, infos in sorted(groups.items())}
