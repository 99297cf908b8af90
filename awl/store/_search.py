"""Searching sessions for what was said.

A log is read as a reader reads it (no lock, nothing written, a torn last
line ignored), a small one whole and a large one in pieces of at most
:data:`PIECE` bytes, on worker threads (the native search releases the GIL),
in the order of the sessions' last activity, most recent first: the first
hits come out while the rest of the store is still being searched.
Natively, the C side reads a log's bytes itself through a per-thread buffer
(:data:`READ_BUFFER`); a line longer than that, the fallback's search, and
the lines of hits are read through the log's :class:`~._logmap.LogMap`.

The native search (``native/search.c``) finds the byte forms the query can
take in a log (:func:`needles`) and confirms each line where one is found;
the rules of a match are :mod:`._search_fallback`'s, which does the same in
Python where the native module is missing.  A query whose letters are not
all ASCII is folded by Unicode rules with ``ignore_case``, in Python, line
by line (``docs/format.md``, "Searching").  Nothing here imports numpy.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import threading
from _queue import SimpleQueue  # queue's own import costs a millisecond
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from ..errors import FormatError, SessionError
from ..paths import (
    log_files,
    missing_text,
    project_dir,
    project_folders,
    recorded_cwd,
    session_root,
)
from . import _native_loader
from ._clock import format_timestamp
from ._header import foreign_log, foreign_problem, header_fields
from ._invalid import invalid_line
from ._logmap import LogMap
from ._needles import needles
from ._search_fallback import (
    BLOCK_KINDS,
    ROLES,
    Matcher,
    decoded_places,
    line_matches,
    load,
    stored_places,
)

PIECE = 8 << 20
"""Bytes searched by one call (a worker's unit, and the window released after it).

Small enough that what two workers hold mapped stays well under the 64 MB
of any other pass; large enough that a call's fixed cost is lost in it."""

BIG = 2 * PIECE
"""A log this large is searched piece by piece as its hits stream out; a smaller one
is searched whole by one worker."""

READ_BUFFER = 1 << 20
"""Bytes each worker thread reads a log through, natively: copying cached pages
into one reused buffer costs less than mapping and unmapping them (a line
longer than this is searched through the reader's map)."""

MAX_HEADER = 1 << 20

MOST_JOBS = 64
"""The most threads one search starts, whatever ``jobs`` asks for."""

NAMED_BAD_LINES = 5
"""Corrupt lines of one log named one by one; any more are counted in one line, so
that a badly damaged log does not flood stderr (``awl reindex --verify`` names
every one)."""

_SNIPPET = 120  # characters of a hit's snippet


DEFAULT_ROLES = frozenset(("user", "assistant"))
"""The roles a query searches unless told: awl's own system prompt opens every
session, and would match its every word in each of them."""


# The public records are named tuples, not dataclasses: the three dataclasses
# cost 3 ms of a search's start-up, and its whole process is timed against
# ripgrep's (docs/performance.md, "Search").


class SearchQuery(NamedTuple):
    """What to look for.

    ``roles`` and ``kinds`` are sets of ``"system"``, ``"user"``,
    ``"assistant"`` (default :data:`DEFAULT_ROLES`, not ``"system"``) and of
    ``"text"``, ``"thinking"``, ``"toolUse"``, ``"toolResult"``; ``since`` and
    ``until`` bound the entry's timestamp (ISO 8601 text, compared as text:
    awl writes ``...Z`` times).
    """

    text: str
    ignore_case: bool = False
    roles: frozenset[str] = DEFAULT_ROLES
    kinds: frozenset[str] = frozenset(BLOCK_KINDS)
    since: str | None = None
    until: str | None = None

    @property
    def fold(self) -> str:
        """How letters are folded: ``""`` (not), ``"ascii"`` (ASCII letters, a query
        all ASCII) or ``"unicode"`` (``str.casefold``, any other query)."""
        if not self.ignore_case:
            return ""
        return "ascii" if self.text.isascii() else "unicode"


class SearchHit(NamedTuple):
    """One block of one message that holds the query."""

    session: str  # the session id
    path: Path
    cwd: str
    entry: str  # the message entry's id
    line: int  # 1-based line of the log
    role: str
    block: str  # "text", "thinking", "toolUse", "toolResult"
    block_index: int
    timestamp: str
    snippet: str  # the text around the match, as it is
    match: tuple[int, int]  # where the (first) match is in the snippet
    matches: tuple[tuple[int, int], ...] = ()  # every match the snippet shows

    def as_json(self) -> dict[str, Any]:
        """The hit as a JSON object (``awl search --json``)."""
        return {
            "session": self.session,
            "path": str(self.path),
            "cwd": self.cwd,
            "entry": self.entry,
            "line": self.line,
            "role": self.role,
            "block": self.block,
            "blockIndex": self.block_index,
            "timestamp": self.timestamp,
            "snippet": self.snippet,
            "match": list(self.match),
            "matches": [list(m) for m in self.matches or (self.match,)],
        }


class SearchProblem(NamedTuple):
    """A log that could not be searched, or a line of one that the search had to
    skip (the rest of that log is still searched), and why, in one line."""

    path: Path
    message: str


# ── which logs, in which order ──


def search_scope(
    cwd: str | os.PathLike[str] | None = None,
    *,
    all_projects: bool = False,
    session: str | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """The logs a search covers, the most recently active first: one session (its id
    or a unique prefix), every project's with ``all_projects``, else those in
    ``cwd``'s project folder (the header's cwd is checked as they are read).

    Raises SessionError (SessionNotFound, AmbiguousSession) for ``session``,
    or when the root cannot be listed.
    """
    root = Path(session_dir) if session_dir is not None else session_root()
    if session is not None:
        from ._catalog import find_session

        return [find_session(session, cwd or os.getcwd(), session_dir=root)]
    if all_projects:
        paths = [p for folder in project_folders(root) for p in _listed(folder)]
    else:
        paths = log_files(project_dir(cwd or os.getcwd(), root))
    return sorted(paths, key=_recency, reverse=True)


def _listed(folder: Path) -> list[Path]:
    try:
        return log_files(folder)
    except SessionError:
        return [folder]  # named when it is searched: it cannot be listed


def _recency(path: Path) -> tuple[str, str]:
    """When a log was last active, from its last line that says (a checkpoint's
    ``lastActivity``, a tree entry's ``timestamp``), else its modification time."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "", path.name
    try:
        st = os.fstat(fd)
        # Lines outside the tree (an import's record, stamped with when it was
        # imported) are no activity of the session's: passed over, in a longer
        # tail when the last 8 KiB hold nothing else.
        for size in (8192, _RECENCY_TAIL):
            tail = os.pread(fd, size, max(0, st.st_size - size))
            found = _last_activity(tail, whole=len(tail) < size)
            if found is not None:
                return found, path.name
            if len(tail) < size:
                break
    except OSError:
        return "", path.name
    finally:
        os.close(fd)
    return format_timestamp(st.st_mtime), path.name


_RECENCY_TAIL = 256 << 10


def _last_activity(tail: bytes, *, whole: bool) -> str | None:
    """The time of the last line of ``tail`` that is a checkpoint or an entry with an
    id (of the tree, or the header); ``whole``: ``tail`` starts at a line's start."""
    lines = tail.rstrip(b"\n").split(b"\n")
    for k in range(len(lines) - 1, -1 if whole else 0, -1):
        obj = load(lines[k])
        if type(obj) is not dict:
            continue
        value = obj["lastActivity"] if "lastActivity" in obj else obj.get("timestamp")
        if ("lastActivity" in obj or "id" in obj) and type(value) is str and value:
            return value
    return None


# ── one log ──


_local = threading.local()


class _Log:
    """A log being searched: its bytes, its header, the range that counts.

    (The private classes here are plain: a dataclass costs a millisecond of
    start-up each, and a search's whole process is timed against ripgrep's.)
    """

    __slots__ = (
        *("bad", "cwd", "end", "fd", "last", "line_at", "lines", "log", "path"),
        *("session", "start"),
    )

    def __init__(
        self,
        path: Path,
        fd: int,
        log: LogMap,
        session: str,
        cwd: str,
        start: int,
        end: int,
        last: int,
    ) -> None:
        self.path, self.fd, self.log = path, fd, log
        self.session, self.cwd = session, cwd
        self.start = start  # where the first entry is
        self.end = end  # where the lines read end (a long torn tail is not even read)
        self.last = last  # where the last line starts: if it is no object, it is a torn tail
        self.line_at = 0  # the offset up to which lines are counted
        self.lines = 0  # lines before line_at
        self.bad = 0  # corrupt lines found so far

    def close(self) -> None:
        self.log.close()
        os.close(self.fd)


def _open_log(path: Path, cwd: str | None, mapped: bool = True) -> _Log | SearchProblem | None:
    """The log at ``path`` with its header read, mapped unless ``mapped`` is false
    (:func:`_search_fd` maps it itself); None when ``cwd`` is not its directory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        return SearchProblem(path, missing_text(path, exc, "no such session file"))
    except OSError as exc:
        return SearchProblem(path, f"{path}: cannot open: {exc.strerror}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return SearchProblem(path, f"{path}: not a regular file")
        size = st.st_size
        if size == 0:  # in the words every other command uses
            os.close(fd)
            return SearchProblem(path, f"{path}: empty file, not a session log")
        head = os.pread(fd, min(size, 4096), 0)
        nl = head.find(b"\n")
        if nl < 0 and size > len(head):
            head = os.pread(fd, min(size, MAX_HEADER), 0)
            nl = head.find(b"\n")
        obj = load(head[:nl] if nl >= 0 else head)
        try:
            tool = foreign_log(obj) if type(obj) is dict else None
            if tool is not None:  # named as every other command names it
                os.close(fd)
                return SearchProblem(path, f"{path}: {foreign_problem(path, tool)}")
            if type(obj) is not dict or obj.get("type") != "session":
                raise FormatError("the first line is not a session header")
            sid, _created, where, _provider, _model = header_fields(obj)
        except FormatError as exc:
            os.close(fd)
            return SearchProblem(path, f"{path}:1: {exc}")
        if cwd is not None and where != cwd:
            os.close(fd)
            return None  # another directory's session in a folder of the same name
        start = nl + 1 if nl >= 0 else size
        got = _Log(path, fd, LogMap(None, 0), sid, where, start, size, size)  # mapped below
        if mapped:
            _map(got)
        return got
    except BaseException:
        os.close(fd)
        raise


def _map(log: _Log) -> None:
    """Map ``log`` as a reader does (a long torn tail left out) and find its last line."""
    log.log = LogMap.for_reader(log.fd, log.end, log.path)
    log.end = len(log.log)
    log.start = min(log.start, log.end)
    if log.end > log.start:
        log.last = max(log.log.rfind(b"\n", log.start, log.end - 1) + 1, log.start)
    else:
        log.last = log.end


# ── worker threads ──

T = TypeVar("T")


class _Task(Generic[T]):
    """A call handed to a worker; :meth:`result` waits for it."""

    __slots__ = ("args", "call", "cancelled", "done", "error", "value")

    def __init__(self, call: Any, args: tuple[Any, ...]) -> None:
        self.call, self.args = call, args
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.cancelled = False

    def result(self) -> T:
        """The call's value, or its exception raised here."""
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[no-any-return]


class _Pool:
    """Worker threads taking calls in order.

    concurrent.futures would do, but it imports logging: together 10 ms of a
    process that ripgrep finishes in about 130 (issue 22's target is 1.5x).
    """

    def __init__(self, workers: int) -> None:
        self._calls: SimpleQueue[_Task[Any] | None] = SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"awl-search-{k}", daemon=True)
            for k in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, call: Any, *args: Any) -> _Task[Any]:
        """Queue ``call(*args)``."""
        task: _Task[Any] = _Task(call, args)
        self._calls.put(task)
        return task

    def _work(self) -> None:
        while (task := self._calls.get()) is not None:
            if not task.cancelled:
                try:
                    task.value = task.call(*task.args)
                except BaseException as exc:  # handed to whoever waits for it
                    task.error = exc
            task.done.set()

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        for _ in self._threads:
            self._calls.put(None)
        for thread in self._threads:
            thread.join()


# ── the search ──

RawHit = tuple[int, int, int, int, int]


def _native() -> Any:
    """The native module, unless absent or the pure scanner was made active
    (``awl.store.scanner.use("fallback")``, for tests)."""
    facade = sys.modules.get(f"{__package__}.scanner")
    if facade is not None and getattr(facade, "IMPLEMENTATION", "native") != "native":
        return None
    return _native_loader.load()[0]


class _Plan:
    """The query as the searching threads use it."""

    __slots__ = (
        *("blob", "every", "kind_mask", "matcher", "native", "needles", "query"),
        *("role_mask", "scratch_size"),
    )

    def __init__(self, query: SearchQuery, matcher: Matcher, found: list[bytes], native: Any):
        self.query, self.matcher, self.needles, self.native = query, matcher, found, native
        self.role_mask = self.kind_mask = 0
        self.blob = b""
        self.scratch_size = 1 << 16
        self.every = False


def _plan(query: SearchQuery) -> _Plan:
    fold = query.fold
    matcher = Matcher(query.text, fold)
    found = [] if fold == "unicode" else needles(query.text, fold == "ascii")
    plan = _Plan(query, matcher, found, None if fold == "unicode" else _native())
    plan.role_mask = sum(1 << (ROLES.index(r) + 1) for r in query.roles if r in ROLES)
    plan.kind_mask = sum(1 << (BLOCK_KINDS.index(k) + 1) for k in query.kinds if k in BLOCK_KINDS)
    plan.blob = b"".join(found)
    plan.every = not found
    return plan


def _scratch(ffi: Any, size: int) -> Any:
    """This thread's scratch buffer for decoding, at least ``size`` bytes (kept: a
    fresh one per call would be zeroed each time)."""
    have = getattr(_local, "scratch", None)
    if have is None or len(have) < size:
        have = _local.scratch = ffi.new("uint8_t[]", size)
    return have


def _native_calls(plan: _Plan, lo: int, hi: int, call: Any) -> tuple[list[RawHit], int]:
    """The hits of ``call(pos, *rest)`` (``awl_search`` or ``awl_search_fd`` with
    their first arguments bound) from ``lo`` on until it reaches ``hi``, and where
    it stopped: a call ends when its hit array is full or a block needs more
    scratch, which then grows; ``call`` returns its count of hits and whether to
    stop (at the place it says it reached)."""
    ffi, lib = plan.native.ffi, plan.native.lib
    text = plan.matcher.needle
    lens = ffi.new("size_t[]", [len(n) for n in plan.needles] or [0])
    out = ffi.new("awl_hit[]", 256)
    state = ffi.new("size_t[2]")  # where to go on, scratch needed
    scratch = _scratch(ffi, plan.scratch_size)
    flags = (lib.AWL_SEARCH_FOLD if plan.matcher.fold == "ascii" else 0) | (
        lib.AWL_SEARCH_EVERY_LINE if plan.every else 0
    )
    hits: list[RawHit] = []
    pos = lo
    while pos < hi:
        n, stop = call(
            pos,
            plan.blob,
            lens,
            len(plan.needles),
            text,
            len(text),
            flags,
            plan.role_mask,
            plan.kind_mask,
            scratch,
            len(scratch),
            out,
            256,
            state,
            state + 1,
        )
        for i in range(n):
            h = out[i]
            hits.append((h.offset, h.length, h.block, h.kind, h.role))
        if stop:
            return hits, state[0]
        if state[1]:
            scratch = _scratch(ffi, state[1] + (state[1] >> 2))
        pos = state[0]
    return hits, hi


def _search_native(plan: _Plan, buf: Any, lo: int, hi: int) -> list[RawHit]:
    lib = plan.native.lib
    with plan.native.ffi.from_buffer("uint8_t[]", buf) as src:
        return _native_calls(
            plan, lo, hi, lambda pos, *rest: (lib.awl_search(src, len(buf), pos, hi, *rest), False)
        )[0]


def _search_python(plan: _Plan, buf: Any, lo: int, hi: int) -> list[RawHit]:
    fold = plan.matcher.fold == "ascii"
    patterns = [re.compile(re.escape(n), re.IGNORECASE) if fold else None for n in plan.needles]
    roles, kinds = plan.query.roles, plan.query.kinds
    hits: list[RawHit] = []
    pos = lo
    while pos < hi:
        if plan.every:
            at = pos
        else:
            at = -1
            for needle, pattern in zip(plan.needles, patterns, strict=True):
                if pattern is not None:
                    m = pattern.search(buf, pos, hi)
                    k = m.start() if m else -1
                else:
                    k = buf.find(needle, pos, hi)
                if k >= 0 and (at < 0 or k < at):
                    at = k
            if at < 0:
                break
        ls = buf.rfind(b"\n", pos, at) + 1 if at > pos else pos
        ls = max(ls, pos)
        le = buf.find(b"\n", at, hi)
        if le < 0:
            le = hi
        hit = line_hit(bytes(buf[ls:le]), ls, plan.matcher, roles, kinds)
        if hit is not None:
            hits.append(hit)
        pos = le + 1
    return hits


def line_hit(
    line: bytes, offset: int, matcher: Matcher, roles: frozenset[str], kinds: frozenset[str]
) -> RawHit | None:
    """A candidate line's hit as the native search reports it, by the fallback's
    rules: ``(offset, length, block, kind, role)``, kind 0 for a line that is no
    JSON object; None for a blank line or one without a matching block."""
    if not line.strip(b" \t\r"):
        return None
    obj = load(line)
    if type(obj) is not dict:
        return (offset, len(line), 0, 0, 0)
    found = line_matches(obj, matcher, roles, kinds)
    if not found:
        return None
    k, kind, _, _ = found[0]
    role = ROLES.index(obj["message"]["role"]) + 1
    return (offset, len(line), k, BLOCK_KINDS.index(kind) + 1, role)


def _search_piece(plan: _Plan, buf: Any, lo: int, hi: int) -> list[RawHit]:
    if plan.native is not None:
        return _search_native(plan, buf, lo, hi)
    return _search_python(plan, buf, lo, hi)


def _pieces(log: _Log) -> Iterator[tuple[Any, int, int, int]]:
    """``(buffer, base, lo, hi)`` pieces of at most :data:`PIECE` bytes, at line starts.

    Each cut is found as its piece is asked for: finding a line's end maps the
    pages around it (2 MB at once where the page cache holds large folios).
    """
    for buf, base, lo, hi in log.log.pieces(log.start, log.end):
        while hi - lo > PIECE:
            cut = buf.find(b"\n", lo + PIECE - 1, hi)
            if cut < 0 or cut + 1 >= hi:
                break
            yield buf, base, lo, cut + 1
            lo = cut + 1
        yield buf, base, lo, hi


_COUNTED = 1 << 20
"""How much of a log :func:`_count_lines` counts (and, the fallback, copies) at once."""


def _count_lines(plan: _Plan, log: _Log, offset: int) -> int:
    """The 1-based line number of the line at ``offset`` (counted on from the last one)."""
    big = log.end - log.start > BIG
    for buf, base, lo, hi in log.log.pieces(log.line_at, offset):
        # A MiB at a time: the stretch since the last hit may be most of a large
        # log, and the fallback copies what it counts.
        src = plan.native.ffi.from_buffer("uint8_t[]", buf) if plan.native is not None else None
        try:
            for at in range(lo, hi, _COUNTED):
                upto = min(at + _COUNTED, hi)
                if src is not None:
                    log.lines += plan.native.lib.awl_count_byte(src, len(buf), at, upto, 10)
                else:
                    log.lines += bytes(buf[at:upto]).count(b"\n")
                if big:
                    # Counting maps pages released since (a hit after a stretch without
                    # any): they go again, so memory stays flat over a large log.
                    log.log.release(base + at, base + upto)
        finally:
            if src is not None:
                plan.native.ffi.release(src)
    log.line_at = offset
    return log.lines + 1


_Between = Callable[[int, int], Iterable[tuple[int, int]]]
"""The matches in a text between two of its places, in order (start, length)."""


def _snippet(
    text: str, first: tuple[int, int], between: _Between
) -> tuple[str, tuple[int, int], tuple[tuple[int, int], ...]]:
    """The block's text around its ``first`` match, as it is (a terminal's line
    shows its newlines and tabs as spaces; ``--json`` gives it exactly, so that
    a match is what it marks); where that match is in it, and every match it
    shows (the first included, as grep colours them), which ``between`` finds
    after the first and no further than the snippet: a block may be
    megabytes long."""
    at, width = first
    # Room for the whole match (a query pasted from a long error line is longer
    # than a snippet), and a third of what is left before it, less when the
    # text ends sooner: a short text is shown whole.
    room = max(_SNIPPET, width)
    start = max(0, min(at - (room - width) // 3, len(text) - room))
    piece = text[start : start + room]
    lead = "…" if start else ""
    tail = "…" if start + room < len(text) else ""
    shift = len(lead) - start
    shown = [(at + shift, at + width + shift)]
    for more, size in between(at + width, start + room):
        if size == 0:
            break
        shown.append((more + shift, more + size + shift))
    return lead + piece + tail, shown[0], tuple(shown)


def _searcher(text: str, plan: _Plan) -> _Between:
    """The matches in ``text`` between two of its places (see :data:`_Between`)."""
    return lambda lo, hi: ((lo + at, size) for at, size in _spans(text[lo:hi], plan))


def _snippet_as_stored(
    stored: str, decoded: str, plan: _Plan
) -> tuple[str, tuple[int, int], tuple[tuple[int, int], ...]]:
    """:func:`_snippet` of a tool call's input found in its decoding (``decoded``):
    shown as stored (as awl show shows it), each match marking the stored
    text it came from."""
    at, width = next(_spans(decoded, plan), (0, 0))
    lo, hi = stored_places(stored, [at, at + width])

    def between(start: int, end: int) -> list[tuple[int, int]]:
        d_start, d_end = decoded_places(stored, [start, end])
        found = [(d_start + a, w) for a, w in _spans(decoded[d_start:d_end], plan) if w]
        ends = stored_places(stored, [p for a, w in found for p in (a, a + w)])
        return [(ends[k], ends[k + 1] - ends[k]) for k in range(0, len(ends), 2)]

    return _snippet(stored, (lo, hi - lo), between)


def _spans(text: str, plan: _Plan) -> Iterator[tuple[int, int]]:
    """Each match of the query in ``text``, in order and not overlapping: its start
    and length, in characters of ``text``."""
    q = plan.query.text
    if plan.matcher.fold == "unicode":
        folded_query = q.casefold()
        pos = 0
        while pos < len(text):
            at, width = _folded_match(text[pos:], folded_query)
            if width == 0:
                return
            yield pos + at, width
            pos += at + width
        return
    raw = text.encode("utf-8", "surrogatepass")
    hay = raw.lower() if plan.matcher.fold else raw
    needle = plan.matcher.needle
    k = hay.find(needle)
    if k < 0:
        yield 0, 0  # cannot happen for a hit: its text holds the query
        return
    # Character places counted on from the last match: a match starts on a
    # character's first byte, so each slice decodes whole.
    chars, last = 0, 0
    while k >= 0:
        chars += len(raw[last:k].decode("utf-8", "replace"))
        last = k
        yield chars, len(q)
        k = hay.find(needle, k + max(len(needle), 1))


def _folded_match(text: str, folded_query: str) -> tuple[int, int]:
    """Where in ``text`` (start, length, in its own characters) the first match of a
    case-folded query is; (0, 0) for none.  Folding can change a text's length
    (``ß`` folds to ``ss``): the match is found in the folded text, and each of
    its ends mapped back to the character whose folding holds it."""
    folded = text.casefold()
    k = folded.find(folded_query)
    if k < 0:
        return 0, 0
    if len(folded) == len(text):
        return k, len(folded_query)  # no character changed its length

    def char_at(offset: int) -> int:
        # The character whose folding holds ``offset`` (a character folds alone:
        # the folded text is the characters' foldings); folded a piece at a time,
        # then the piece that holds it a character at a time.
        pos, i, step = 0, 0, 4096
        while i < len(text):
            piece = text[i : i + step]
            size = len(piece.casefold())
            if pos + size > offset:
                for j, ch in enumerate(piece):
                    pos += len(ch.casefold())
                    if pos > offset:
                        return i + j
            pos += size
            i += step
        return len(text)

    first = char_at(k)
    last = char_at(k + max(len(folded_query), 1) - 1)
    return first, last + 1 - first


def _hits(plan: _Plan, log: _Log, raw: list[RawHit]) -> Iterator[SearchHit | SearchProblem]:
    q = plan.query
    for offset, length, _block, kind, _role in raw:
        if kind == 0 and offset == log.last:
            continue  # a torn last line: a reader ignores it, as every reader does
        line = _count_lines(plan, log, offset)
        if kind == 0:
            # Named, and skipped: one bad line must not hide the hits after it.
            log.bad += 1
            if log.bad <= NAMED_BAD_LINES:
                said = invalid_line(log.log.view(offset, offset + length))
                yield SearchProblem(log.path, f"{log.path}:{line}: {said}")
            continue
        obj = load(log.log.view(offset, offset + length))
        stamp = obj.get("timestamp") if type(obj) is dict else None
        stamp = stamp if type(stamp) is str else ""
        if (q.since is not None and stamp < q.since) or (q.until is not None and stamp > q.until):
            continue
        entry = obj.get("id")
        role = obj["message"]["role"]
        for index, block, text, stored in line_matches(obj, plan.matcher, q.roles, q.kinds):
            if stored is None:
                snippet, match, matches = _snippet(
                    text, next(_spans(text, plan), (0, 0)), _searcher(text, plan)
                )
            else:
                snippet, match, matches = _snippet_as_stored(stored, text, plan)
            yield SearchHit(
                log.session,
                log.path,
                log.cwd,
                entry if type(entry) is str else "",
                line,
                role,
                block,
                index,
                stamp,
                snippet,
                match,
                matches,
            )


def _unnamed(log: _Log) -> SearchProblem | None:
    """The one line that counts a log's corrupt lines past :data:`NAMED_BAD_LINES`."""
    more = log.bad - NAMED_BAD_LINES
    if more <= 0:
        return None
    what = (
        "line is not a complete JSON object" if more == 1 else "lines are not complete JSON objects"
    )
    return SearchProblem(
        log.path,
        f"{log.path}: and {more} more {what} (awl reindex --verify names every one)",
    )


class _Done:
    """What a worker did with a small log: its hits, or why it could not search it."""

    __slots__ = ("big", "hits")

    def __init__(self, hits: list[SearchHit | SearchProblem], big: _Log | None = None):
        self.hits = hits
        self.big = big  # a large log, opened: searched piecewise by the caller


def _search_small(plan: _Plan, path: Path, cwd: str | None) -> _Done:
    # Natively, the file is read and searched in one C call (no GIL held for
    # any of it, which two threads feel); only a log with hits, or with a line
    # longer than the read buffer, is then mapped here.
    fd_search = plan.native is not None and os.name == "posix"
    try:
        got = _open_log(path, cwd, mapped=not fd_search)
    except OSError as exc:
        return _Done([SearchProblem(path, f"{path}: cannot read: {exc.strerror or exc}")])
    except SessionError as exc:  # a log cut under every read of it
        return _Done([SearchProblem(path, str(exc))])
    if got is None:
        return _Done([])
    if isinstance(got, SearchProblem):
        return _Done([got])
    try:
        if got.end - got.start > BIG:
            if fd_search:
                _map(got)
            big, got = got, None  # the caller searches it, and closes it
            return _Done([], big=big)
        if fd_search:
            raw, reached = _search_fd(plan, got, got.start, got.end, sets_last=True)
            whole = reached == got.end
            if not raw and whole:
                return _Done([])
            last = got.last
            _map(got)  # (which may move got.end: a long torn tail is left out)
            if whole:
                got.last = last  # the file's last line, even where the map leaves a torn tail out
            else:  # a line longer than the read buffer: on through the map
                raw += _search_mapped(plan, got, reached, got.end)
        else:
            raw = [
                h
                for buf, base, lo, hi in _pieces(got)
                for h in _piece_hits(plan, buf, base, lo, hi)
            ]
        out: list[SearchHit | SearchProblem] = list(_hits(plan, got, raw))
        more = _unnamed(got)
        if more is not None:
            out.append(more)
        return _Done(out)
    except OSError as exc:
        return _Done([SearchProblem(path, f"{path}: cannot read: {exc.strerror or exc}")])
    except SessionError as exc:
        return _Done([SearchProblem(path, str(exc))])
    finally:
        if got is not None:
            got.close()


_BATCH = 4
"""Logs handed to a worker at once: a task's hand-over costs about as much as
the search of a small log."""


def _search_batch(plan: _Plan, paths: list[Path], cwd: str | None) -> list[_Done]:
    return [_search_small(plan, path, cwd) for path in paths]


def _search_fd(
    plan: _Plan, log: _Log, lo: int, hi: int, *, sets_last: bool = False
) -> tuple[list[RawHit], int]:
    """:func:`_search_native` over ``[lo, hi)`` of ``log``'s file, which the C side
    reads itself into this thread's read buffer; and where it stopped: ``hi``, or
    a line longer than the buffer, for the caller to search on from through a
    map (:func:`_search_mapped`).  With ``sets_last``, a search that reached
    ``hi`` sets ``log.last`` to where the last line of the range starts."""
    ffi, lib = plan.native.ffi, plan.native.lib
    last = ffi.new("size_t *", log.last)
    error = ffi.new("int *")
    rbuf = getattr(_local, "rbuf", None)
    if rbuf is None or len(rbuf) != READ_BUFFER:
        rbuf = _local.rbuf = ffi.new("uint8_t[]", READ_BUFFER)

    def call(pos: int, *rest: Any) -> tuple[int, bool]:
        n: int = lib.awl_search_fd(log.fd, log.end, pos, hi, *rest, last, error, rbuf, len(rbuf))
        if error[0] == lib.AWL_SEARCH_LONG_LINE:
            return n, True
        if error[0]:
            raise OSError(error[0] if error[0] > 0 else 0, os.strerror(max(error[0], 0)))
        return n, False

    hits, reached = _native_calls(plan, lo, hi, call)
    if sets_last and reached == hi:
        log.last = last[0]
    return hits, reached


def _search_mapped(plan: _Plan, log: _Log, lo: int, hi: int) -> list[RawHit]:
    """The hits of ``[lo, hi)`` through ``log``'s map (made by :func:`_map`, which
    leaves a long torn tail out and maps no last line: a writer cutting it
    cannot pull a page from under the search)."""
    return [
        h
        for buf, base, a, b in log.log.pieces(lo, min(hi, log.end))
        for h in _piece_hits(plan, buf, base, a, b)
    ]


def search(
    query: SearchQuery,
    logs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    limit: int | None = None,
) -> Generator[SearchHit | SearchProblem, None, None]:
    """Every hit of ``query`` in ``logs``, log by log in the order given, each log's in
    file order; a log that cannot be searched gives a :class:`SearchProblem` and
    the others are searched all the same.  A corrupt line where the search
    looks gives one too, in its place among its log's hits, and the rest of
    that log is still searched (past 5 corrupt lines of one log, one
    last problem counts the others).

    ``cwd``, when given, skips logs whose header names another directory (made
    absolute first, as a session records it).  Nothing is written, locked or
    trimmed.  ``jobs`` threads search at once (default: the cores, at most 4;
    never more than 64 whatever is asked); ``limit``
    stops after that many hits.  Memory holds the hits of a few logs (a large
    log's: of a few pieces).
    """
    if not isinstance(query, SearchQuery):
        raise TypeError(f"query must be a SearchQuery, not {type(query).__name__}")
    _check(query)
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    # Checked here, not when the first hit is asked for.  The logs are taken as the
    # search reaches them (a scope's walk goes on while the first hits come out).
    given = [logs] if isinstance(logs, str | os.PathLike) else logs  # not its characters
    where = recorded_cwd(cwd) if cwd is not None else None
    return _search(_plan(query), (Path(p) for p in given), where, jobs, limit)


_WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ].*)?")


def _check(query: SearchQuery) -> None:
    """ValueError for a query that would match everything or nothing by mistake."""
    if not query.text:
        raise ValueError("the query is empty: it would match every block")
    for name, given, known in (
        ("roles", query.roles, ROLES),
        ("kinds", query.kinds, BLOCK_KINDS),
    ):
        if isinstance(given, str) or not set(given) <= set(known):
            raise ValueError(f"{name} must be a set of {', '.join(known)}, not {given!r}")
    for name, when in (("since", query.since), ("until", query.until)):
        # Compared as text with the log's timestamps: an age ("7d") matches nothing.
        if when is not None and not (isinstance(when, str) and _WHEN.fullmatch(when)):
            raise ValueError(
                f"{name} must be a timestamp such as 2026-05-01T00:00:00.000Z, not {when!r}"
            )


class _SwitchInterval:
    """The interpreter's thread switch interval, short while any search runs and put
    back when the last one ends (two searches may overlap: a program's own
    setting must outlive both)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._before = 0.0

    def __enter__(self) -> None:
        with self._lock:
            if not self._users:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(min(self._before, 0.0005))
            self._users += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._users -= 1
            if not self._users:
                sys.setswitchinterval(self._before)


_short_switches = _SwitchInterval()


def _search(
    plan: _Plan, logs: Iterator[Path], cwd: str | None, jobs: int | None, limit: int | None
) -> Generator[SearchHit | SearchProblem, None, None]:
    # Each thread keeps a read buffer and queued work: a count far past the cores
    # (-j 100000) would only exhaust memory or the system's threads.
    workers = min(jobs or min(4, os.cpu_count() or 1), MOST_JOBS)
    paths = iter(logs)
    ahead: deque[_Task[list[_Done]]] = deque()
    count = 0
    # Workers hand results back through the GIL: a short switch interval keeps
    # them from waiting out the default 5 ms each time (a convoy on many logs).
    with _short_switches, _Pool(workers) as pool:

        def fill() -> None:
            while len(ahead) < 4 * workers:
                batch = list(islice(paths, _BATCH))
                if not batch:
                    return
                ahead.append(pool.submit(_search_batch, plan, batch, cwd))

        taken: list[_Done] = []
        try:
            fill()
            while ahead:
                taken = ahead.popleft().result()
                fill()
                while taken:
                    done = taken.pop(0)
                    found: Iterator[SearchHit | SearchProblem] = iter(done.hits)
                    if done.big is not None:
                        found = _search_big(plan, done.big, pool)
                    for item in found:
                        yield item
                        if isinstance(item, SearchHit):
                            count += 1
                            if limit is not None and count >= limit:
                                return
        finally:
            for task in ahead:
                task.cancelled = True
            for task in ahead:
                task.done.wait()  # a call already running ends; the rest are skipped
                taken += task.value or []
            for done in taken:
                if done.big is not None:
                    done.big.close()


def _search_big(plan: _Plan, log: _Log, pool: _Pool) -> Iterator[SearchHit | SearchProblem]:
    """A large log's hits, piece after piece, a few pieces searched ahead."""
    pieces = _pieces(log)
    by_fd = plan.native is not None and os.name == "posix"
    running: deque[tuple[_Task[Any], int, int]] = deque()
    try:
        while True:
            while len(running) < 2 and (piece := next(pieces, None)) is not None:
                buf, base, lo, hi = piece
                if by_fd:  # read natively, as a small log is; the map only finds the cuts
                    task = pool.submit(_search_fd, plan, log, base + lo, base + hi)
                else:
                    task = pool.submit(_piece_hits, plan, buf, base, lo, hi)
                running.append((task, base + lo, base + hi))
            if not running:
                break
            task, lo, hi = running.popleft()
            raw: list[RawHit]
            if by_fd:
                raw, reached = task.result()
                if reached < hi:  # a line longer than the read buffer: on through the map
                    raw += _search_mapped(plan, log, reached, hi)
            else:
                raw = task.result()
            yield from _hits(plan, log, raw)
            log.log.release(lo, hi)  # memory stays flat over a large log
        more = _unnamed(log)
        if more is not None:
            yield more
    finally:
        for task, _, _ in running:
            task.cancelled = True
        for task, _, _ in running:
            task.done.wait()  # its pages are not unmapped under it
        log.close()


def _piece_hits(plan: _Plan, buf: Any, base: int, lo: int, hi: int) -> list[RawHit]:
    hits = _search_piece(plan, buf, lo, hi)
    return [(o + base, n, b, k, r) for o, n, b, k, r in hits] if base else hits
