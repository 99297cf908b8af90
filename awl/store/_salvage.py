"""A few messages of a log that an open refuses: ``awl show --around`` on a damaged log.

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
entry at all: a branch whose parent it was starts after it.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import orjson

from ..errors import CorruptSession, SessionError
from ..paths import session_file_name
from . import scanner
from ._clock import format_timestamp
from ._entries import Checkpoint, MessageEntry, SessionHeader
from ._fs import Env, default_env
from ._ids import uuid7
from ._invalid import invalid_line
from ._lines import Problems
from ._logfile import LogFile
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
        if type(obj) is dict and type(obj.get("provider")) is str and type(obj.get("model")) is str:
            return obj["provider"], obj["model"]
    return header.provider, header.model


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


SALVAGE_TYPE = "x-salvage"
"""The entry (outside the tree) that begins a salvaged log: where it came from,
and what of it was left out or hung elsewhere."""


def salvage(path: str | os.PathLike[str], env: Env | None = None) -> Salvaged | None:
    """Copy what can be read of the log at ``path`` into a new session beside it,
    leaving the log itself byte for byte as it is; None when there is nothing to
    salvage (every line reads, every parent is there).

    A line that is no entry (not JSON, bytes that are not UTF-8, a message
    awl's reader refuses) is left out; a child of a left-out entry goes under
    that entry's parent when its line still names it (see the module's
    docstring), else under the entry before it in the file, as does one whose
    parent no line names.  Checkpoints are left out (they describe the old
    file's offsets), and a torn last line, which no reader takes.  The new log
    has a new id, the header's time, working directory and model, and a first
    entry of type :data:`SALVAGE_TYPE` that names the source and what was left
    out or moved.  It is written under a hidden name, verified as ``awl reindex
    --verify`` verifies, and only then named: a salvage that would not open
    leaves nothing.

    SessionError (and its kin) when the log cannot be read, has no header, or
    the new one cannot be written.
    """
    e = env or default_env()
    p = Path(os.path.abspath(os.fspath(path)))
    log = LogFile.open(p, read_only=True, env=e)
    try:
        mm = log.map()
        records = mm.scan(0, len(mm))
        if len(records) > 1 and int(records["kind"][-1]) == scanner.KIND_INVALID:
            records = records[:-1]
        header = log.header
        plan = _salvage_plan(mm, records, p)
    finally:
        log.close()
    lines, kept, left_out, relinked = plan
    if not left_out and not relinked:
        return None
    copy = salvaged_copy(p)
    if copy is not None:
        # One copy: another would be a second session of the same conversation.
        raise SessionError(
            f"{p}: salvaged already, into {copy} (awl --resume {copy} goes on from it; "
            "remove it to salvage again)"
        )
    # Its time the header's, as its file name's: it lists where the session began.
    sid = uuid7(max(0.0, datetime.fromisoformat(header.timestamp).timestamp()))
    new_header = SessionHeader(sid, header.timestamp, header.cwd, header.provider, header.model)
    target = p.parent / session_file_name(header.timestamp, sid)
    note = {
        "type": SALVAGE_TYPE,
        "timestamp": format_timestamp(time.time()),
        "from": os.fsdecode(p),
        "session": header.id,
        "leftOut": [[n, why] for n, why in left_out],
        "relinked": [[n, was, now] for n, was, now in relinked],
    }
    body = [orjson.dumps(note, option=orjson.OPT_APPEND_NEWLINE), *lines]
    made = LogFile.create(target, new_header, body, e, place=False)
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
    return Salvaged(target, sid, kept, left_out, relinked)


def _salvage_plan(
    mm: LogMap, records: Records, p: Path
) -> tuple[list[bytes], int, list[tuple[int, str]], list[tuple[int, str | None, str | None]]]:
    """The lines of a salvaged log (after its header), the entries among them, the
    lines left out and the entries relinked (see :func:`salvage`)."""
    kinds = records["kind"].tolist()
    offsets = records["offset"].tolist()
    lengths = records["length"].tolist()
    lines: list[bytes] = []
    left_out: list[tuple[int, str]] = []
    relinked: list[tuple[int, str | None, str | None]] = []
    # A left-out entry whose line still names its id and parent: where its children go.
    moved_up: dict[str, str | None] = {}
    kept_ids: set[str] = set()
    last_id: str | None = None  # the last tree entry kept, in file order
    kept = 0
    for row in range(1, len(kinds)):
        kind = kinds[row]
        if kind in (scanner.KIND_BLANK, scanner.KIND_CHECKPOINT):
            continue
        start, length = offsets[row], lengths[row]
        raw = bytes(mm.view(start, start + length))
        if kind == scanner.KIND_INVALID:
            problem = invalid_line(mm.view(start, start + length))
            entry = None
        else:
            try:
                entry = parse_at(mm, start, length, row, p)
                problem = ""
            except CorruptSession as exc:
                entry, problem = None, exc.problem
        if entry is not None and isinstance(entry, SessionHeader | Checkpoint):
            entry, problem = None, "a second header" if isinstance(entry, SessionHeader) else ""
            if not problem:
                continue
        base = entry.base if entry is not None else None
        if base is not None and base.id in kept_ids:
            problem = f"a second entry with id {base.id!r}"
            entry, base = None, None
        if entry is None:
            left_out.append((row + 1, problem))
            m = _MESSAGE_START.match(raw[:80])
            if m is not None and m[1].decode() not in kept_ids:
                parent = m[2].decode() if m[2] is not None else None
                moved_up[m[1].decode()] = moved_up.get(parent, parent) if parent else None
            continue
        kept += 1
        if base is None:  # an entry outside the tree: as it is
            lines.append(raw + b"\n")
            continue
        named = base.parent_id
        parent = named
        while parent is not None and parent in moved_up:
            parent = moved_up[parent]
        if parent is not None and parent not in kept_ids:
            parent = last_id  # its parent is nowhere: under the entry before it
        if parent != named:
            relinked.append((row + 1, named, parent))
            obj = orjson.loads(raw)
            obj["parentId"] = parent
            raw = orjson.dumps(obj)
        lines.append(raw + b"\n")
        kept_ids.add(base.id)
        last_id = base.id
    return lines, kept, left_out, relinked


def salvaged_copy(path: Path) -> Path | None:
    """The log in ``path``'s folder that :func:`salvage` made of it, if there is one:
    its second line is the :data:`SALVAGE_TYPE` entry naming ``path``."""
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
            with open(other, "rb") as f:
                f.readline(1 << 16)  # the header
                second = f.readline(1 << 20)
        except OSError:
            continue
        if not second.startswith(mark):
            continue
        try:
            note = orjson.loads(second)
        except orjson.JSONDecodeError:
            continue
        if isinstance(note, dict) and note.get("from") == os.fsdecode(path):
            return other
    return None
