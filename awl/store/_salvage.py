"""What can be read of a log that an open refuses: a few messages of it (``awl show
--around`` on a damaged log), or all of it as a new session (``awl salvage``).

An open stops at the first corrupt line (:class:`~awl.errors.CorruptSession`):
a conversation rebuilt past it could not be trusted.  Showing a few
messages around one asks less.  Here the log is scanned as a reader scans
it (a torn last line left out), its tree built as ``awl reindex --verify``
builds it (every link that can be made is made), and only the messages of
the window, and the user message that names the active model, are read.

A corrupt line that still begins as awl writes a message entry (its
``type``, ``id`` and ``parentId`` come first: damage later in the line, a
byte that is not UTF-8 in its text, leaves them whole) keeps its place in
the tree, so the messages on either side of it are still one branch; in a
window it is an :class:`UnreadableMessage`.  Any other corrupt line is no
entry at all: a branch whose parent it was starts after it.  A salvage
(:func:`salvage`) copies every readable line, its children under the left-out
entry's parent where the line still names it, and verifies the copy before
it names it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import orjson

from ..errors import CorruptSession, SessionError, SessionWriteError
from ..paths import (
    ASIDE_SUFFIX,
    SESSION_FILE_RE,
    encode_cwd,
    session_file_name,
    session_root,
)
from . import scanner
from ._clock import format_timestamp, is_timestamp
from ._entries import Checkpoint, MessageEntry, SessionHeader, UnknownEntry
from ._fs import Env, default_env, open_regular
from ._ids import uuid7
from ._invalid import invalid_line
from ._lines import Problems
from ._listing import name_info
from ._logfile import LogFile, read_header
from ._logmap import LogMap
from ._numpy import np
from ._reader import parse_at
from ._scanner_abi import Records
from ._tree import build_tree
from ._verify import verify_log

# The members awl writes first on a message line, as it writes them.
_MESSAGE_START = re.compile(
    rb'\{"type":"message","id":"([0-9a-f]{8})","parentId":(?:null|"([0-9a-f]{8})")'
)


class UnreadableMessage(NamedTuple):
    """A message of a window whose line cannot be read: its entry id, its 1-based
    line, and what is wrong with it (as ``awl reindex --verify`` words it)."""

    entry: str
    line: int
    problem: str


class Window(NamedTuple):
    """What :func:`window_in_damaged_log` read: the log's header, the messages of the
    window (the one asked for at ``at``), the leaf, the entries off the current
    branch, and the active provider and model as an open would derive them."""

    header: SessionHeader
    messages: list[MessageEntry | UnreadableMessage]
    at: int
    leaf: str | None
    off_branch: int
    provider: str
    model: str


def window_in_damaged_log(
    path: str | os.PathLike[str], entry_id: str | None, context: int = 3, env: Env | None = None
) -> Window:
    """The message ``entry_id`` with up to ``context`` messages before it (on its own
    branch) and after it (when it is on the current branch), read from a log
    whatever its other lines hold.  ``entry_id`` None: the last message of the
    current branch (with a large ``context``, all of the branch that can be read).

    KeyError when the log has no such message; SessionError (and its kin)
    when the log cannot be opened or has no session header.
    """
    p = Path(os.path.abspath(os.fspath(path)))
    log = LogFile.open(p, read_only=True, env=env or default_env())
    try:
        mm = log.map()
        records = mm.scan(0, len(mm))
        kind = records["kind"]
        if len(records) > 1 and int(kind[-1]) == scanner.KIND_INVALID:
            records = records[:-1]  # a torn last line: every reader ignores it
            kind = records["kind"]
        bad: dict[int, str] = {}
        for row in np.flatnonzero(kind == scanner.KIND_INVALID).tolist():
            start = int(records["offset"][row])
            raw = mm.view(start, start + int(records["length"][row]))
            bad[row] = invalid_line(raw)
            m = _MESSAGE_START.match(bytes(raw[:80]))
            if m is not None:  # an entry still: the tree keeps its place
                flags = scanner.FLAG_ID | scanner.FLAG_ID_HEX | scanner.FLAG_PARENT
                kind[row] = scanner.KIND_MESSAGE
                records["id"][row] = int(m[1], 16)
                if m[2] is None:
                    flags |= scanner.FLAG_PARENT_NULL
                else:
                    flags |= scanner.FLAG_PARENT_HEX
                    records["parent"][row] = int(m[2], 16)
                records["flags"][row] = flags
        # Every other problem (a parent no line names, a duplicate id) cuts a
        # link or is passed over, as verification does: the window is read.
        tree = build_tree(records, mm, p, Problems(p, collect=True))

        def messages(leaf_pos: int) -> list[int]:
            rows = tree.rows[tree.branch(leaf_pos)]
            return [int(r) for r in rows[kind[rows] == scanner.KIND_MESSAGE]]

        leaf_pos = len(tree) - 1  # as an open finds it: the last entry of the log
        current = messages(leaf_pos) if len(tree) else []
        if entry_id is None:
            if not current:
                raise KeyError("no message")
            pos: int | None = int(np.searchsorted(tree.rows, current[-1]))
        else:
            pos = tree.pos_of(entry_id)
        if pos is None or int(kind[int(tree.rows[pos])]) != scanner.KIND_MESSAGE:
            raise KeyError(entry_id)
        target = int(tree.rows[pos])
        upto = messages(pos)
        after = current[current.index(target) + 1 :][:context] if target in current else []
        before = upto[-(context + 1) :]
        shown: list[MessageEntry | UnreadableMessage] = []
        for row in before + after:
            eid = tree.id_at(int(np.searchsorted(tree.rows, row)))
            if row in bad:
                shown.append(UnreadableMessage(eid, row + 1, bad[row]))
                continue
            start = int(records["offset"][row])
            try:
                entry = parse_at(mm, start, int(records["length"][row]), row, p)
            except CorruptSession as exc:
                shown.append(UnreadableMessage(eid, row + 1, exc.problem))
                continue
            if isinstance(entry, MessageEntry):
                shown.append(entry)
            else:  # indexed as a message, parsed as something else
                shown.append(UnreadableMessage(eid, row + 1, "not a message entry"))
        provider, model = _active_model(mm, records, current, bad, log.header)
        return Window(
            log.header,
            shown,
            len(before) - 1,
            tree.id_at(leaf_pos) if len(tree) else None,
            len(tree) - len(tree.branch(leaf_pos)) if len(tree) else 0,
            provider,
            model,
        )
    finally:
        log.close()


def _active_model(
    mm: LogMap, records: Records, branch: list[int], bad: dict[int, str], header: SessionHeader
) -> tuple[str, str]:
    """The last readable user message's provider and model on ``branch``, else the
    header's (an open takes the last user message's, else a checkpoint's)."""
    for row in reversed(branch):
        if row in bad or int(records["role"][row]) != scanner.ROLE_USER:
            continue
        start = int(records["offset"][row])
        try:
            obj = orjson.loads(mm.view(start, start + int(records["length"][row])))
        except orjson.JSONDecodeError:
            continue
        named = _model_of(obj)
        if named is not None:
            return named
    return header.provider, header.model


def _model_of(obj: object) -> tuple[str, str] | None:
    """The provider and model a user message's line names (where its request went)."""
    if type(obj) is dict and type(obj.get("provider")) is str and type(obj.get("model")) is str:
        return obj["provider"], obj["model"]
    return None


class Salvaged(NamedTuple):
    """What :func:`salvage` made of a damaged log: the new log and its session id,
    the entries copied into it, and of the source's lines those left out (1-based
    line, the problem) and the entries hung under another parent (1-based line,
    the parent named, the one given: None for a root)."""

    path: Path
    session: str
    kept: int
    left_out: list[tuple[int, str]]
    relinked: list[tuple[int, str | None, str | None]]
    # Where the damaged log was moved (``<its name>.salvaged``, beside it); None when
    # it could not be, and ``aside_problem`` says why: it is then where it was.
    aside: Path | None = None
    aside_problem: str | None = None
    # Whether the copy's header was made again (the log's own was damaged): from
    # the log's file name, its folder and its last message; the copy's says what.
    rebuilt: bool = False


SALVAGE_TYPE = "x-salvage"
"""The entry (outside the tree) that begins a salvaged log: where it came from,
and what of it was left out or hung elsewhere."""


def salvage(
    path: str | os.PathLike[str],
    env: Env | None = None,
    *,
    cwd: str | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> Salvaged | None:
    """Copy what can be read of the log at ``path`` into a new session beside it,
    and keep the log itself, byte for byte, as ``<its name>.salvaged``; None when
    there is nothing to salvage (every line reads, every parent is there, no
    link makes a loop; a torn last line alone is none: the next writer moves
    it aside, and the session goes on under its own id).

    A line that is no entry (not JSON, bytes that are not UTF-8, a message
    awl's reader refuses, a second entry with an id taken already) is left
    out, and so is a torn last line; a child of a left-out entry goes under
    that entry's parent when its line still names it (see the module's
    docstring), else under the entry before it in the file, as does one whose
    parent no line holds.  A link that would close a loop is cut (the entry
    becomes a root).  Checkpoints are not copied: they describe the old
    file's offsets.  The new log has a new id, the header's time, working
    directory and model, and a first entry of type :data:`SALVAGE_TYPE` that
    names the source and what was left out or moved.  It is written under a
    hidden name, verified as ``awl reindex --verify`` verifies, and only then
    named: a salvage that would not open leaves nothing.  Then the damaged log
    is renamed ``<its name>.salvaged``, its bytes as they were: no command
    takes it for a session any more (:attr:`Salvaged.aside`).

    A log whose first line, its header, is damaged is salvaged under the id
    and time its file name gives, the provider and model of its last message
    that names them, and the working directory its folder stands for (a
    folder's name stands for several paths, as ``-`` may be a ``/``): the
    one directory that the other logs' headers in the folder, this
    machine's directories and ``cwd`` name between them, or ``cwd`` among
    several; when none is known, SessionError says so.  Only a log in awl's
    session store (``session_dir``, by default :func:`awl.paths.session_root`)
    is mended so: its folders say whose session it was, and pi's store names
    its folders and files as awl does.

    :class:`SessionBusy` when an awl process has the log open to write (it
    holds the writers' lock, which the salvage holds until the log is renamed);
    SessionError (and its kin) when the log cannot be read, has no header,
    holds no entry that can be read, was salvaged already (its copy is in
    the same folder), or the new one cannot be written.
    """
    e = env or default_env()
    p = Path(os.path.abspath(os.fspath(path)))
    # The writers' lock, held until the log is renamed: a session running on it
    # (SessionBusy) would go on writing to a file no command takes any more.
    lost: str | None = None
    try:
        log = LogFile.open(p, read_only=True, env=e, lock=True)
    except CorruptSession as exc:
        if exc.line != 1 or not exc.damage:
            raise  # not damage: no log at all, or a later awl's
        lost = exc.problem
        stand_in = _stand_in_header(p, cwd, exc, session_dir)
        log = LogFile.open(p, read_only=True, env=e, lock=True, header=stand_in)
    try:
        return _salvage_locked(p, log, e, lost)
    finally:
        log.close()


def _salvage_locked(p: Path, log: LogFile, e: Env, lost: str | None) -> Salvaged | None:
    """:func:`salvage` with the log open and locked; ``lost`` the problem of its
    first line when that line, the header, is damaged (its header then a stand-in)."""
    mm = log.map()
    records = mm.scan(0, len(mm))
    torn: tuple[int, str] | None = None
    if len(records) > 1 and int(records["kind"][-1]) == scanner.KIND_INVALID:
        # No reader takes it; it is named among what was left out all the same.
        start, length = int(records["offset"][-1]), int(records["length"][-1])
        why = invalid_line(mm.view(start, start + length))
        torn = (len(records), f"the last line, which no reader takes: {why}")
        records = records[:-1]
    header = log.header
    # Line 1 read as any other line when it is no header: an entry is kept.
    plan = _salvage_plan(mm, records, p, first=0 if lost is not None else 1)
    if lost is not None:
        header = _with_model(header, plan.lines)
        if plan.left_out[:1] and plan.left_out[0][0] == 1:
            plan.left_out[0] = (1, lost)  # which says it was the header
    if not plan.left_out and not plan.relinked and lost is None:
        # A torn last line alone is no damage: the next writer (a resume, awl
        # reindex) moves it aside, and the session goes on under its own id.
        return None
    if torn is not None:
        plan.left_out.append(torn)
    if not plan.tree:
        raise SessionError(f"{p}: nothing of it can be read: no entry to salvage")
    copy = salvaged_copy(p, header.id)
    if copy is not None:
        # One copy: another would be a second session of the same conversation.
        raise SessionError(
            f"{p}: salvaged already, into {copy} (awl --resume {copy} goes on from it; "
            "remove it to salvage again)"
        )
    # The copy begins when the session began (its id's time and its file name's), so
    # that it lists beside it; now, for a header whose time is not one awl writes.
    when = header.timestamp if is_timestamp(header.timestamp) else format_timestamp()
    sid = uuid7(max(0.0, datetime.fromisoformat(when).timestamp()))
    new_header = SessionHeader(sid, header.timestamp, header.cwd, header.provider, header.model)
    target = p.parent / session_file_name(when, sid)
    note = {
        "type": SALVAGE_TYPE,
        "timestamp": format_timestamp(time.time()),
        # (A name that is not UTF-8 as JSON can hold it: its bytes escaped.)
        "from": os.fsencode(p).decode("utf-8", "backslashreplace"),
        "session": header.id,
        "leftOut": [[n, why] for n, why in plan.left_out],
        "relinked": [[n, was, now] for n, was, now in plan.relinked],
    }
    if lost is not None:
        # The header the copy's was made from its file name and its folder, not read.
        note["header"] = lost
    body = [orjson.dumps(note, option=orjson.OPT_APPEND_NEWLINE), *plan.lines]
    try:
        made = LogFile.create(target, new_header, body, e, place=False)
    except SessionWriteError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise SessionWriteError(
            f"{p}: cannot write its salvaged copy in {p.parent}: {why}", errno=exc.errno
        ) from None
    hidden = made.hidden_path
    assert hidden is not None
    report = verify_log(hidden)
    if not report.ok:
        line, problem = report.problems[0] if report.problems else (None, "")
        where = f"line {line}: " if line is not None else ""
        made.abandon(
            SessionError(f"{p}: what can be read of it does not make a log ({where}{problem})")
        )
    try:
        made.place()
    finally:
        made.close()
    aside, unmoved = _move_aside(p, e)
    return Salvaged(
        target, sid, plan.kept, plan.left_out, plan.relinked, aside, unmoved, lost is not None
    )


def _move_aside(path: Path, env: Env) -> tuple[Path | None, str | None]:
    """The damaged log renamed ``<name>.salvaged`` (its bytes as they were), so that
    no command takes it for a session any more (the most recent one to resume,
    a log reindex reports); or why it could not be."""
    if path.name.endswith(ASIDE_SUFFIX):
        return path, None  # aside already (its copy removed, salvaged again)
    aside = path.with_name(path.name + ASIDE_SUFFIX)
    try:
        env.rename_noreplace(path, aside)
    except OSError as exc:
        return None, exc.strerror or str(exc)
    with contextlib.suppress(OSError):
        env.sync_dir(path.parent)
    return aside, None


def _stand_in_header(
    p: Path,
    cwd: str | None,
    damage: CorruptSession,
    session_dir: str | os.PathLike[str] | None,
) -> SessionHeader:
    """The header of a log whose own is damaged: see :func:`salvage`.  Its provider
    and model are filled in from the lines read (:func:`_with_model`)."""
    root = os.fspath(session_dir) if session_dir is not None else os.fspath(session_root())
    folder = Path(os.path.realpath(p.parent))  # a link to a project folder: the folder
    if not _same_folder(folder.parent, root):
        # Only a project folder of awl's own store says whose session it is: pi's
        # store names its folders and files alike, and a copy elsewhere, nothing.
        raise SessionError(
            f"{damage}; a log whose header is damaged is salvaged in awl's session store "
            f"({root}) only, whose folders say whose session it was"
        )
    # The id and time a damaged header held, as the file's name gives them.
    sid, when = name_info(Path(p.name.removesuffix(ASIDE_SUFFIX)))
    if not when:
        raise SessionError(
            f"{damage}; its file name is not one awl gives a log, which would say whose "
            "session it was"
        )
    place = _cwd_of_folder(folder / p.name, cwd)
    if place is None:
        raise SessionError(
            f"{damage}; the working directory it recorded is not known (its folder's name "
            "stands for several, or for none here): run awl salvage in the session's directory"
        )
    return SessionHeader(sid, when, place, "", "")


def _same_folder(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one folder (by device and inode, as the importer
    tells awl's own store: a bind mount or a link is the same folder)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _cwd_of_folder(p: Path, cwd: str | None) -> str | None:
    """The working directory whose sessions the folder of the log at ``p`` holds:
    the one directory that the headers of the other logs there record, this
    machine's directories whose names make the folder's, and ``cwd`` (when the
    folder is its) name between them; when they name several (``/a-b`` and
    ``/a/b`` share a folder), ``cwd`` if it is one of them; else None."""
    folder = p.parent.name
    candidates = set(_directories_named(folder))
    try:
        names = sorted(os.listdir(p.parent))
    except OSError:
        names = []
    for name in names:
        if name != p.name and SESSION_FILE_RE.match(name):
            with contextlib.suppress(SessionError, OSError):
                recorded = read_header(p.parent / name).cwd
                if encode_cwd(recorded) == folder:
                    candidates.add(recorded)
    here = cwd is not None and encode_cwd(cwd) == folder
    if here:
        assert cwd is not None
        candidates.add(cwd)
    if len(candidates) == 1:
        return candidates.pop()
    return cwd if here else None


def _directories_named(folder: str, budget: int = 4096) -> list[str]:
    """The directories of this machine whose folder name is ``folder``: each ``-``
    of the name is a ``-`` or a ``/``, tried where the path so far is a
    directory (at most ``budget`` tries; at most two found, enough to tell one
    from several)."""
    if not (folder.startswith("--") and folder.endswith("--")) or len(folder) < 5:
        return []
    parts = folder[2:-2].split("-")
    found: list[str] = []
    stack = [("/" + parts[0], 1)]
    while stack and budget > 0 and len(found) < 2:
        budget -= 1
        path, k = stack.pop()
        if k == len(parts):
            if os.path.isdir(path) and encode_cwd(path) == folder:
                found.append(path)
            continue
        stack.append((path + "-" + parts[k], k + 1))
        # (An empty part, a name that began with "-", makes "//": not the folder's.)
        if os.path.isdir(path):
            stack.append((path + "/" + parts[k], k + 1))
    return found


def _with_model(header: SessionHeader, lines: list[bytes]) -> SessionHeader:
    """``header`` with the provider and model of the last user message that names
    them, as an open takes the session's model (:func:`_active_model`)."""
    for raw in reversed(lines):
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        named = _model_of(obj) if type(obj) is dict and obj.get("type") == "message" else None
        if named is not None:
            return SessionHeader(header.id, header.timestamp, header.cwd, *named)
    return header


class _Plan(NamedTuple):
    """The lines of a salvaged log after its header, the entries among them (and of
    those, the tree entries), the lines left out and the entries relinked."""

    lines: list[bytes]
    kept: int
    tree: int
    left_out: list[tuple[int, str]]
    relinked: list[tuple[int, str | None, str | None]]


def _salvage_plan(mm: LogMap, records: Records, p: Path, first: int = 1) -> _Plan:
    """See :func:`salvage`: each line from row ``first`` read, then each tree
    entry's parent settled (a parent may come later in the file: the format
    allows it)."""
    kinds = records["kind"].tolist()
    offsets = records["offset"].tolist()
    lengths = records["length"].tolist()
    left_out: list[tuple[int, str]] = []
    # Each line kept: its row, its bytes, and its id and parent (None: outside the tree).
    kept: list[tuple[int, bytes, tuple[str, str | None] | None]] = []
    # A left-out entry whose line still names its id and parent: where its children go.
    moved_up: dict[str, str | None] = {}
    ids: set[str] = set()  # the tree entries kept
    for row in range(first, len(kinds)):
        kind = kinds[row]
        if kind in (scanner.KIND_BLANK, scanner.KIND_CHECKPOINT):
            continue
        start, length = offsets[row], lengths[row]
        raw = bytes(mm.view(start, start + length))
        entry: object = None
        if kind == scanner.KIND_INVALID:
            problem = invalid_line(mm.view(start, start + length))
        else:
            try:
                entry = parse_at(mm, start, length, row, p)
                problem = ""
            except CorruptSession as exc:
                problem = exc.problem
        if isinstance(entry, Checkpoint):
            continue
        if isinstance(entry, SessionHeader):
            entry, problem = None, "a second header"
        base = entry.base if isinstance(entry, MessageEntry | UnknownEntry) else None
        if base is not None and base.id in ids:
            entry, problem = None, f"a second entry with id {base.id!r}"
        if entry is None:
            left_out.append((row + 1, problem))
            m = _MESSAGE_START.match(raw[:80])
            if m is not None:
                eid = m[1].decode()
                moved_up.setdefault(eid, m[2].decode() if m[2] is not None else None)
            continue
        if base is None:
            kept.append((row, raw, None))
        else:
            ids.add(base.id)
            kept.append((row, raw, (base.id, base.parent_id)))
    # Each tree entry's parent: the one named when it is kept; up through left-out
    # entries to one that is; else the tree entry before it in the file.
    parent_of: dict[str, str | None] = {}
    last: str | None = None
    for _, _, node in kept:
        if node is None:
            continue
        eid, named = node
        parent, seen = named, set()
        while parent is not None and parent not in ids and parent in moved_up:
            if parent in seen:
                break  # left-out lines that name each other: no way up
            seen.add(parent)
            parent = moved_up[parent]
        if parent is not None and parent not in ids:
            parent = last
        parent_of[eid] = parent
        last = eid
    _cut_loops(parent_of)
    lines: list[bytes] = []
    relinked: list[tuple[int, str | None, str | None]] = []
    for row, raw, node in kept:
        if node is not None and parent_of[node[0]] != node[1]:
            now = parent_of[node[0]]
            relinked.append((row + 1, node[1], now))
            obj = orjson.loads(raw)
            obj["parentId"] = now
            raw = orjson.dumps(obj)
        lines.append(raw + b"\n")
    return _Plan(lines, len(kept), len(ids), left_out, relinked)


def _cut_loops(parent_of: dict[str, str | None]) -> None:
    """Make a root of one entry of each loop of parents (a chain that comes back to
    itself never reaches a root): the last of the loop in ``parent_of``'s order."""
    order = {eid: k for k, eid in enumerate(parent_of)}
    done: set[str] = set()
    for first in parent_of:
        path: list[str] = []
        on_path: set[str] = set()
        at: str | None = first
        while at is not None and at not in done and at not in on_path:
            path.append(at)
            on_path.add(at)
            at = parent_of.get(at)
        if at is not None and at in on_path:
            loop = path[path.index(at) :]
            parent_of[max(loop, key=order.__getitem__)] = None
        done.update(path)


def salvaged_copy(path: Path, session: str) -> Path | None:
    """The log in ``path``'s folder that :func:`salvage` made of the session
    ``session`` (the log at ``path``), if there is one: its second line is the
    :data:`SALVAGE_TYPE` entry naming that session."""
    mark = b'{"type":"' + SALVAGE_TYPE.encode() + b'",'
    try:
        names = sorted(os.listdir(path.parent))
    except OSError:
        return None
    for name in names:
        if not name.endswith(".jsonl") or name == path.name:
            continue
        other = path.parent / name
        try:
            # Not a FIFO named like a log: it would hang the read.
            with os.fdopen(open_regular(default_env(), other), "rb") as f:
                f.readline(1 << 16)  # the header
                second = f.readline(1 << 20)
        except (OSError, SessionError):
            continue
        if not second.startswith(mark):
            continue
        try:
            note = orjson.loads(second)
        except orjson.JSONDecodeError:
            continue
        if isinstance(note, dict) and note.get("session") == session:
            return other
    return None
