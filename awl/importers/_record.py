"""Import records: what each import wrote into an awl log about its source.

Each batch an import appends starts with one ``x-import`` entry (outside
the tree): the source files and how much of each it has taken (bytes, lines,
a hash of those bytes), what it skipped, and the keys of the batch's tree
entries in order.  The entries follow it in the same write, so their awl ids
are read from the log itself, and an ``x-import-end`` line naming the
record's ``batch`` ends it: a long write is not atomic, and a batch a kill
cut short lacks that line (:func:`cut_short`); its record is then read as
never written, and the next import takes that part of the source again.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import SessionError
from ..store import scanner

RECORD_TYPE = "x-import"
END_TYPE = "x-import-end"
"""The line that ends a batch, naming the record's ``batch``: a batch without it was
cut short (a crash, a kill, during the write; a long write is not atomic)."""
_START = b'{"type":"x-import",'
_END = b'{"type":"x-import-end",'
# A tree entry's line starts with its type and its id (awl writes them first).
_TREE_ID = re.compile(rb'\{"type":"(?:[^"\\]|\\.)*","id":"((?:[^"\\]|\\.)*)"')


@dataclass(slots=True)
class Imported:
    """What earlier imports recorded in one awl log."""

    records: list[dict[str, Any]] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)  # source key -> awl id
    cut: int = 0  # records whose batch a crash cut short (left out)
    cut_ids: set[str] = field(default_factory=set)  # the ids those batches wrote

    @property
    def last(self) -> dict[str, Any] | None:
        """The latest record (the state of every source file), or None."""
        return self.records[-1] if self.records else None


@contextlib.contextmanager
def _mapped(path: str | os.PathLike[str]) -> Iterator[mmap.mmap | None]:
    """The log at ``path``, mapped read-only (None when it is empty).  SessionError
    when it cannot be opened or is no regular file, as for any log."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise SessionError(f"{os.fspath(path)}: cannot open: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SessionError(f"{os.fspath(path)}: not a regular file")
        mm = mmap.mmap(fd, st.st_size, prot=mmap.PROT_READ) if st.st_size else None
    except OSError as exc:
        raise SessionError(f"{os.fspath(path)}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)  # the mapping holds the file
    try:
        yield mm
    finally:
        if mm is not None:
            mm.close()


_NEAR = 4096  # bytes searched by mmap before the scanner is called


def _native() -> bool:
    # The pure fallback copies each piece it searches, and then searches it as
    # CPython does: mmap's own search is then the faster.
    return scanner.IMPLEMENTATION == "native"


def _find(mm: mmap.mmap, needle: bytes, start: int = 0, near: int = _NEAR) -> int:
    """``mm.find(needle, start)`` (``start`` >= 0) at memory speed: the native
    scanner's memmem, as CPython's search crawls through JSON and a log's
    records are looked for on every import."""
    if not _native():
        return mm.find(needle, start)
    # Near first, with mmap's own search: a call into the scanner costs more than
    # a short search (the records of a session imported often are close).
    found = mm.find(needle, start, start + near)
    if found >= 0 or start + near >= len(mm):
        return found
    # What starts in the near bytes and runs past them, or later.
    return scanner.find(mm, needle, max(start, start + near - len(needle) + 1))


def _rfind(
    mm: mmap.mmap, needle: bytes, end: int | None = None, width: int = 1 << 16, near: int = _NEAR
) -> int:
    """``mm.rfind(needle, 0, end)`` (a needle, ``end`` >= 0) at memory speed: windows
    from the end, each twice the one before, searched forward; the window
    that holds a match is then halved down to the last one."""
    stop = len(mm) if end is None else min(end, len(mm))
    if not _native():
        return mm.rfind(needle, 0, stop)
    found = mm.rfind(needle, max(0, stop - near), stop)  # as in _find
    if found >= 0 or stop <= near:
        return found
    hi = stop - near  # what is left starts before the near bytes
    while hi > 0:
        lo = max(0, hi - width)
        # A match that starts in [lo, hi) ends before hi + its length; one that
        # starts later was looked for already.
        limit = min(stop, hi + len(needle) - 1)
        if scanner.find(mm, needle, lo, limit) >= 0:
            return _last_in(mm, needle, lo, limit)
        hi, width = lo, min(2 * width, 1 << 26)
    return -1


def _last_in(mm: mmap.mmap, needle: bytes, lo: int, limit: int) -> int:
    """The last match in [lo, limit), which holds one: the range halved while it is
    long (a log of many small batches holds a record every few lines)."""
    n = len(needle)
    while limit - lo > 4 * n + 64:
        mid = (lo + limit) // 2
        if scanner.find(mm, needle, mid, limit) >= 0:
            lo = mid
        else:
            limit = min(limit, mid + n - 1)  # the match starts before mid
    at = scanner.find(mm, needle, lo, limit)
    while (after := scanner.find(mm, needle, at + 1, limit)) >= 0:
        at = after
    return at


def _line_at(mm: mmap.mmap, start: int) -> tuple[bytes, int]:
    end = mm.find(b"\n", start)
    end = len(mm) if end < 0 else end
    return mm[start:end], end + 1


def _last_at(mm: mmap.mmap | None) -> int:
    """Where the last import record's line starts (-1: none).  A last line without
    its newline that is no whole JSON object is torn (a write cut short), not a
    record: the next writer's open moves it to the log's .corrupt file (a whole
    one is an entry, as the store takes it)."""
    if mm is None:
        return -1
    at = _rfind(mm, b"\n" + _START)
    if at >= 0 and mm.find(b"\n", at + 1) < 0:
        try:
            whole = isinstance(orjson.loads(mm[at + 1 :]), dict)
        except orjson.JSONDecodeError:
            whole = False
        if not whole:
            at = _rfind(mm, b"\n" + _START, at)
    return at + 1 if at >= 0 else -1


def _last(mm: mmap.mmap | None, path: str | os.PathLike[str]) -> dict[str, Any] | None:
    at = _last_at(mm)
    return None if mm is None or at < 0 else _parse(_line_at(mm, at)[0], path)


def cut_short(path: str | os.PathLike[str]) -> int | None:
    """Where the last import record of the log at ``path`` starts, when its batch was
    cut short: the record names a ``batch`` and no line ending that batch
    follows it.  None otherwise (and for records of older imports, which name
    none)."""
    with _mapped(path) as mm:
        at = _last_at(mm)
        if mm is None or at < 0:
            return None
        return at if _unended(mm, at, _parse(_line_at(mm, at)[0], path)) else None


def _unended(mm: mmap.mmap, at: int, record: dict[str, Any]) -> bool:
    """Whether the record at ``at`` names a batch that no later line ends."""
    batch = record.get("batch")
    if batch is None:
        return False
    end = _find(mm, b"\n" + _END, at)
    while end >= 0:
        line, nxt = _line_at(mm, end + 1)
        if _ends(line, batch):
            return False
        end = _find(mm, b"\n" + _END, nxt - 1)
    return True


def last_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The latest import record of the log at ``path``, found from its end
    (no lock taken, nothing else parsed), or None."""
    with _mapped(path) as mm:
        return _last(mm, path)


FORMAT_NAMES = {"pi": "pi", "claude": "Claude Code", "codex": "Codex"}
"""Each source format (a record's ``format``) by the name of the tool that writes it."""


def subagent_file(rel: str, suffix: str = ".jsonl") -> bool:
    """Whether a Claude Code session's file ``rel`` (its path from the session
    file's folder, as records name it) is a subagent's transcript (``suffix``
    ``.meta.json``: its metadata): ``agent-*`` in the session's ``subagents``
    folder (Claude Code 2.1, any depth), or beside the session file (2.0).
    Any other file there (a workflow's journal) is none, whatever it holds."""
    *folders, name = rel.split("/")
    return (
        name.startswith("agent-")
        and name.endswith(suffix)
        and (not folders or "subagents" in folders)
    )


def import_origin(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Where the session at ``path`` was imported from: ``{"format", "source",
    "sourceId"}`` of its latest import record (and ``subagentTranscripts``, how
    many subagent transcripts it holds, when there are any; ``cutShort`` true
    when that record's batch was cut short: until the next import takes the
    rest, what the batch wrote is the session's end; ``stopped`` true when the
    import stopped after that batch, before the rest of what it read, a Ctrl+C
    between two batches of a long source), or None for a session awl began.

    An imported log holds an import record right after its header, so a log
    without one there costs one line's read, however long it is.
    """
    with _mapped(path) as mm:
        nl = mm.find(b"\n") if mm is not None else -1
        if mm is None or nl < 0 or mm[nl + 1 : nl + 1 + len(_START)] != _START:
            return None
        at = _last_at(mm)
        record = None if at < 0 else _parse(_line_at(mm, at)[0], path)
        cut = record is not None and _unended(mm, at, record)
    if record is None:
        return None
    origin = {k: record.get(k) for k in ("format", "source", "sourceId")}
    if cut:
        origin["cutShort"] = True
    elif record.get("more") is True:
        origin["stopped"] = True
    files = record.get("files")
    # Subagents' transcripts are kept as opaque entries: neither shown nor searched.
    n = sum(1 for rel in files if subagent_file(rel)) if isinstance(files, dict) else 0
    if n:
        origin["subagentTranscripts"] = n
    return origin


def read_records(path: str | os.PathLike[str], *, end: int | None = None) -> Imported:
    """Every whole import record of the log at ``path`` (those that start before
    ``end``, when given), and the awl id of each source key they name.

    A record whose batch was cut short (it names a ``batch`` and its end line
    does not follow its entries) is left out, as if never written: the next
    import takes that part of the source again, and what the cut batch wrote
    stays in the log, off the branch; the ids it wrote are in ``cut_ids``.  A
    torn last line is no record.  Raises SessionError when a record of an
    older import (which names no batch) does not match the entries after it.
    """
    out = Imported()
    with _mapped(path) as mm:
        if mm is None:
            return out
        last = _last_at(mm)
        at = _find(mm, b"\n" + _START)
        while at >= 0 and (end is None or at + 1 < end) and at + 1 <= last:
            raw, nxt = _line_at(mm, at + 1)
            record = _parse(raw, path)
            keys = record.get("keys") or []
            n = record.get("entries")
            if not isinstance(n, int) or not isinstance(keys, list):
                raise SessionError(f"{path}: an import record without its entry count")
            ids: list[str] = []
            pos = nxt
            # Of a batch cut short, the ids before the first line no batch holds
            # (the checkpoint the open that trimmed its torn line wrote).
            own: int | None = None
            for _ in range(n):
                line, pos = _line_at(mm, pos)
                if own is None and line.startswith((b'{"type":"checkpoint"', _START)):
                    own = len(ids)
                m = _TREE_ID.match(line, 0, 4096)
                if m is not None:
                    ids.append(orjson.loads(b'"' + m.group(1) + b'"'))
            batch = record.get("batch")
            if batch is not None and not _ends(_line_at(mm, pos)[0], batch):
                out.cut += 1
                out.cut_ids.update(ids[:own])
                at = _find(mm, b"\n" + _START, nxt - 1)
                continue
            if len(ids) != len(keys):
                raise SessionError(
                    f"{path}: an import record names {len(keys)} entries but {len(ids)} follow it"
                )
            out.ids.update(zip(keys, ids, strict=True))
            out.records.append(record)
            at = _find(mm, b"\n" + _START, pos - 1)
        return out


def _ends(line: bytes, batch: str) -> bool:
    """Whether ``line`` is the end line of the batch ``batch``."""
    if not line.startswith(_END):
        return False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("batch") == batch


def _parse(raw: bytes, path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise SessionError(f"{Path(path)}: an import record that is not JSON") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("files"), dict):
        raise SessionError(f"{Path(path)}: an import record without its files")
    return obj
