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
from pathlib import Path
from typing import NamedTuple

import orjson

from ..errors import CorruptSession
from . import scanner
from ._entries import MessageEntry, SessionHeader
from ._fs import Env, default_env
from ._invalid import invalid_line
from ._lines import Problems
from ._logfile import LogFile
from ._logmap import LogMap
from ._numpy import np
from ._reader import parse_at
from ._scanner_abi import Records
from ._tree import build_tree

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
