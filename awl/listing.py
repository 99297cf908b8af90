"""Session listings: one line per log, from its header and its last checkpoint.

A listing must cost the same for a 300 MB log as for a 3 KB one, and a
thousand of them must list faster than a person notices.  So a log is not
opened as a session here: two reads of its ends (one for a small log) give
the header and the last line; when that last line is a checkpoint that fits
the log, it holds everything a listing shows.  A small log that has no
checkpoint (the 1% budget keeps them off logs under ~150 KB) is read whole
and its few lines parsed.  Anything else — a torn tail, entries after the
checkpoint, an unusual entry, any doubt — is answered by opening the log
read-only as :class:`awl.manager.SessionManager` does, which is the
authority: the quick path only ever gives the answer that open would give.

Nothing here imports numpy or the index, so ``awl sessions`` starts fast.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .conversation import ROLES
from .errors import FormatError, SessionError
from .format import (
    MessageEntry,
    SessionHeader,
    checkpoint_fits,
    disk_message_to_internal,
    first_words,
    format_timestamp,
    parse_checkpoint,
    parse_header,
    parse_object,
)
from .paths import SESSION_FILE_RE, log_files, project_dir, session_root

__all__ = [
    "SessionInfo",
    "list_all_sessions",
    "list_sessions",
    "local_time",
    "session_info",
    "unique_prefixes",
]

SMALL_LOG = 256 * 1024
"""Logs up to this size are read whole in one read (and, without a checkpoint, parsed)."""

_HEAD_READ = 8192
_TAIL_READ = 16384


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


class _Doubt(Exception):
    """The quick path cannot answer for this log; the full open must."""


def _read_ends(path: Path) -> tuple[os.stat_result, bytes, bytes, int]:
    """(stat, head, tail, tail offset): the whole file when it is small."""
    # O_NONBLOCK: a FIFO named like a log must not hang the listing; for a
    # regular file it changes nothing.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Doubt  # the full open names the problem
        size = st.st_size
        if size <= SMALL_LOG:
            data = os.pread(fd, size, 0)
            if len(data) != size:
                raise _Doubt  # changed under us
            return st, data, data, 0
        head = os.pread(fd, _HEAD_READ, 0)
        tail_at = size - _TAIL_READ
        tail = os.pread(fd, _TAIL_READ, tail_at)
        if len(tail) != _TAIL_READ:
            raise _Doubt
        return st, head, tail, tail_at
    finally:
        os.close(fd)


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
    st, head, tail, tail_at = _read_ends(path)
    size = st.st_size
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
    if start == 0 and tail_at != 0:
        raise _Doubt  # the last line is longer than what was read
    body = nl + 1
    last_at = tail_at + start
    if last_at < body:
        raise _Doubt  # only a header
    last = _load(tail[start:-1])
    modified = format_timestamp(st.st_mtime)
    if last.get("type") == "checkpoint":
        try:
            cp = parse_checkpoint(last)
        except FormatError:
            raise _Doubt from None
        if not checkpoint_fits(cp, last_at, body, header):
            raise _Doubt
        return SessionInfo(
            path=path,
            id=header.id,
            cwd=header.cwd,
            created=header.timestamp,
            modified=modified,
            message_count=cp.message_count,
            first_prompt=cp.first_prompt,
            last_activity=cp.last_activity,
            size=size,
        )
    if tail_at != 0:
        raise _Doubt
    count, prompt, activity = _replay_small(tail, body, header)
    return SessionInfo(
        path=path,
        id=header.id,
        cwd=header.cwd,
        created=header.timestamp,
        modified=modified,
        message_count=count,
        first_prompt=prompt,
        last_activity=activity,
        size=size,
    )


def _entry(obj: dict[str, Any]) -> MessageEntry:
    try:
        entry = parse_object(obj)
    except FormatError:
        raise _Doubt from None
    if not isinstance(entry, MessageEntry):
        raise _Doubt
    return entry


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
    if not objs:
        return 0, "", header.timestamp
    branch: list[int] = []
    pos = len(objs) - 1
    while pos != -1:
        branch.append(pos)
        pos = parents[pos]
    branch.reverse()
    users = [i for i in branch if objs[i]["message"]["role"] == "user"]
    # Parse what the full open parses, so that a bad entry there is left to it.
    for i in reversed(users):
        entry = _entry(objs[i])
        if entry.provider and entry.model:
            break
    prompt = ""
    for i in users:
        text = disk_message_to_internal(_entry(objs[i]).message).text()
        if text.strip():
            prompt = first_words(text)
            break
    leaf = _entry(objs[branch[-1]])
    return len(branch), prompt, leaf.base.timestamp or header.timestamp


def _full_info(path: Path, cwd: str | None, st: os.stat_result) -> SessionInfo | None:
    from .manager import SessionManager  # numpy and the index: only when needed

    modified = format_timestamp(st.st_mtime)
    try:
        with SessionManager.open(path, read_only=True) as m:
            if cwd is not None and m.cwd != cwd:
                return None
            return SessionInfo(
                path=path,
                id=m.id,
                cwd=m.cwd,
                created=m.header.timestamp,
                modified=modified,
                message_count=m.message_count,
                first_prompt=m.first_prompt,
                last_activity=m.last_activity,
                size=m.size,
            )
    except SessionError as exc:
        name = SESSION_FILE_RE.match(path.name)
        sid = name.group("id") if name else path.stem
        created = ""
        if name:
            ts = name.group("ts")
            created = f"{ts[:10]}T{ts[11:13]}:{ts[14:16]}:{ts[17:19]}.{ts[20:23]}Z"
        return SessionInfo(
            path, sid, cwd or "", created, modified, 0, size=st.st_size, error=str(exc)
        )


def session_info(path: Path, cwd: str | None = None) -> SessionInfo | None:
    """The listing line of one log (None when its header names another cwd than ``cwd``).

    A log that cannot be read gets a line with its ``error``.
    """
    try:
        return _quick_info(path, cwd)
    except (_Doubt, OSError):
        pass
    try:
        st = path.stat()
    except OSError as exc:
        return SessionInfo(path, path.stem, cwd or "", "", "", 0, error=exc.strerror)
    return _full_info(path, cwd, st)


def _sorted(infos: Iterable[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda i: (i.created, i.path.name))


def list_sessions(
    cwd: str | os.PathLike[str], *, session_dir: str | os.PathLike[str] | None = None
) -> list[SessionInfo]:
    """The sessions whose header cwd is ``cwd``, oldest first (see :func:`session_info`)."""
    cwd_text = os.path.abspath(os.fspath(cwd))
    folder = project_dir(cwd_text, session_dir)
    return _sorted(
        info for p in log_files(folder) if (info := session_info(p, cwd_text)) is not None
    )


def list_all_sessions(
    *, session_dir: str | os.PathLike[str] | None = None
) -> dict[str, list[SessionInfo]]:
    """Every project's sessions, grouped by header cwd (sorted), oldest first in each."""
    root = Path(session_dir) if session_dir is not None else session_root()
    groups: dict[str, list[SessionInfo]] = {}
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return {}
    for folder in folders:
        for p in log_files(folder):
            info = session_info(p, None)
            if info is not None:
                groups.setdefault(info.cwd or f"(unreadable, in {folder})", []).append(info)
    return {cwd: _sorted(infos) for cwd, infos in sorted(groups.items())}


def unique_prefixes(ids: list[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix of each id that no other id shares, at least ``minimum`` long."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for k, sid in enumerate(ordered):
        n = minimum
        for other in ordered[max(k - 1, 0) : k + 2]:
            if other != sid:
                pairs = enumerate(zip(sid, other, strict=False))
                common = next((i for i, (a, b) in pairs if a != b), min(len(sid), len(other)))
                n = max(n, common + 1)
        out[sid] = sid[: min(n, len(sid))]
    return out


def local_time(timestamp: str) -> str:
    """``YYYY-MM-DD HH:MM`` in local time, from an ISO timestamp."""
    try:
        return (
            datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
            .astimezone()
            .strftime("%Y-%m-%d %H:%M")
        )
    except ValueError:
        return "????-??-?? ??:??"
