"""Reading entries out of a log: by location, by index row, along a branch.

Every read checks that the line is the entry the index or the checkpoint
says it is; a line that is not raises :class:`StaleIndex` (the index, or a
location, no longer matches the log: the caller scans afresh), and a line
that is no valid entry raises :class:`CorruptSession` with its line number.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import orjson

from ..conversation import Message
from ..errors import CorruptSession, FormatError
from . import scanner
from ._codec import entry_message, load_object, message_from_object, parse_object
from ._entries import Checkpoint, FileEntry, Location, MessageEntry, SessionEntry, SessionHeader
from ._index import LogIndex
from ._logmap import LogMap, Passing
from ._numpy import np, npt
from ._state import first_words, prompt_words
from ._tree import SLOW_KEY_BASE, Tree

PathLike = str | os.PathLike[str]


class StaleIndex(Exception):
    """An index record or a location does not match the log's bytes."""


def parse_at(log: LogMap, offset: int, length: int, line: int, path: PathLike) -> FileEntry:
    """The entry on the 0-based ``line`` at ``offset``; CorruptSession if it is none."""
    try:
        return parse_object(load_object(log.view(offset, offset + length)))
    except FormatError as exc:
        raise CorruptSession(path, line + 1, str(exc)) from None


def entry_at(log: LogMap, loc: Location, path: PathLike) -> SessionEntry:
    """The tree entry at ``loc``; StaleIndex when the line is another one."""
    entry = parse_at(log, loc.offset, loc.length, loc.line, path)
    if isinstance(entry, SessionHeader | Checkpoint) or entry.base is None:
        raise StaleIndex
    if entry.base.id != loc.id:
        raise StaleIndex
    return entry


def message_at(log: LogMap, loc: Location, path: PathLike) -> Message:
    """The Conversation message of the message entry at ``loc``.

    Straight from the JSON object to the in-memory blocks; anything off
    takes the slow path, which gives the exact error or finds the location
    stale.
    """
    return _message_at(log, loc, path, stamped=False)[1]


def stamped_message_at(
    log: LogMap, loc: Location, path: PathLike, *, served: bool = False
) -> tuple[str, Message]:
    """(timestamp, Conversation message) of the message entry at ``loc``: as
    :func:`message_at`, with the entry's own time (``served``: and the
    provider, model and usage it records)."""
    return _message_at(log, loc, path, stamped=True, served=served)


def _message_at(
    log: LogMap, loc: Location, path: PathLike, *, stamped: bool, served: bool = False
) -> tuple[str, Message]:
    o, n = loc.offset, loc.length
    try:
        obj = orjson.loads(log.view(o, o + n))
    except orjson.JSONDecodeError:
        obj = None
    if type(obj) is dict and obj.get("id") == loc.id:
        stamp = obj.get("timestamp")
        if type(stamp) is str or not stamped:
            fast = message_from_object(obj, served=served)
            if fast is not None:
                return (stamp if type(stamp) is str else ""), fast
    entry = entry_at(log, loc, path)
    if not isinstance(entry, MessageEntry):
        raise StaleIndex
    return entry.base.timestamp, entry_message(entry)


def fields_at(log: LogMap, index: LogIndex, row: int, path: PathLike) -> scanner.EntryFields:
    """(timestamp, provider, model) of an indexed line, without parsing its content."""
    offset = int(index.records["offset"][row])
    length = int(index.records["length"][row])
    # Trusted when this process scanned the line: it is valid, so the
    # scanner need only find the fields, not check every string again.
    # A cache file's records get the full check.
    fields = scanner.entry_fields(log.view(offset, offset + length), trusted=not index.from_cache)
    if fields is None:  # the index said valid: a cache that lied, or the log changed
        raise CorruptSession(path, row + 1, "not a complete JSON object")
    return fields


def entry_at_row(log: LogMap, index: LogIndex, row: int, path: PathLike) -> FileEntry:
    """The entry on an indexed line."""
    rec = index.records
    return parse_at(log, int(rec["offset"][row]), int(rec["length"][row]), row, path)


def prompt_at(log: LogMap, index: LogIndex, row: int, path: PathLike) -> str:
    """:func:`awl.store._state.prompt_words` of the indexed user message at ``row``."""
    offset = int(index.records["offset"][row])
    length = int(index.records["length"][row])
    try:
        obj = orjson.loads(log.view(offset, offset + length))
    except orjson.JSONDecodeError:
        obj = None
    # Straight to the Conversation message, as a rebuild does; the slow
    # path gives the exact error for anything off.
    fast = message_from_object(obj) if type(obj) is dict else None
    if fast is not None:
        return first_words(fast.text())
    entry = entry_at_row(log, index, row, path)
    return prompt_words(entry.message) if isinstance(entry, MessageEntry) else ""


def locations(index: LogIndex, tree: Tree, rows: npt.NDArray[np.int64]) -> list[Location]:
    """The locations of the tree nodes at index rows ``rows``."""
    # Field by field: a gather of whole structured records is slow in numpy.
    rec = index.records
    pos = np.searchsorted(tree.rows, rows)
    return [
        Location(o, n, r, tree.id_at(p))
        for o, n, r, p in zip(
            rec["offset"][rows].tolist(),
            rec["length"][rows].tolist(),
            rows.tolist(),
            pos.tolist(),
            strict=True,
        )
    ]


def branch_positions(tree: Tree, leaf: str | None) -> npt.NDArray[np.int64]:
    """Node positions from the root to ``leaf``; StaleIndex when the tree lacks it."""
    if leaf is None:
        return np.zeros(0, dtype=np.int64)
    pos = tree.pos_of(leaf)
    if pos is None:
        raise StaleIndex
    return tree.branch(pos)


def branch_messages(index: LogIndex, tree: Tree, leaf: str | None) -> list[Location]:
    """The locations of the message entries on the branch ending at ``leaf``."""
    branch = branch_positions(tree, leaf)
    rows = tree.rows[branch]
    rec = index.records
    is_msg = rec["kind"][rows] == scanner.KIND_MESSAGE
    msg_rows, msg_pos = rows[is_msg], branch[is_msg]
    # Whole columns at once: per-row scalar indexing of a memory-mapped
    # cache costs more than parsing the messages.
    offsets = rec["offset"][msg_rows].tolist()
    lengths = rec["length"][msg_rows].tolist()
    keys = tree.keys[msg_pos].tolist()
    ids = [tree.slow_names[k] if k >= SLOW_KEY_BASE else f"{k:08x}" for k in keys]
    return [
        Location(o, n, r, i)
        for o, n, r, i in zip(offsets, lengths, msg_rows.tolist(), ids, strict=True)
    ]


def walk(log: LogMap, locs: list[Location], path: PathLike) -> Iterator[tuple[Location, Passing]]:
    """``locs`` in order, releasing the log's pages behind the pass (a pass over
    a long branch holds a window of the log, not all it has read)."""
    behind: Passing | None = None
    for loc in locs:
        if behind is None or behind.log is not log:
            behind = log.passing(loc.offset)
        behind.at(loc.offset)
        yield loc, behind
