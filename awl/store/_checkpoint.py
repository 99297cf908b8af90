"""Checkpoint lines: when one is believed, and when one is written.

A checkpoint summarizes the session at its position so that an open reads
only what follows it (``docs/format.md``, "Checkpoint lines").  Believing
one is the open's and the listing's shared rule (:func:`checkpoint_fits`,
:func:`checkpoint_locates`): a checkpoint copied from another log, moved,
or placing the leaf anywhere but the last entry is not believed, and the
log is indexed instead.  Writing one is :class:`CheckpointPolicy`'s rule:
often enough that the tail after the last one stays short, never more than
1% of the log's bytes.

Nothing here imports numpy: ``awl sessions`` uses the trust rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import orjson

from ..errors import FormatError
from ._clock import format_timestamp
from ._codec import load_object, parse_checkpoint, serialize_checkpoint
from ._entries import RECENT, Checkpoint, Location, SessionHeader
from ._state import SessionState

# ── believing ──


def checkpoint_fits(cp: Checkpoint, offset: int, body: int, header: SessionHeader) -> bool:
    """Whether a checkpoint read at ``offset`` can be trusted for the log it is in.

    ``body`` is where the header line ends (the first entry's offset).  A
    checkpoint copied from another log, moved, or naming lines it cannot
    have seen is not trusted: the caller then derives the state from the log.
    """
    return (
        cp.offset == offset
        and cp.session_id == header.id
        and cp.created == header.timestamp
        and cp.line >= 1
        and cp.message_count <= cp.entry_count
        and len(cp.recent) <= min(cp.message_count, RECENT)
        and (cp.leaf_id is None) == (cp.entry_count == 0)
        and all(o >= body and o + n < offset for o, n, _line, _id in cp.recent)
        and (cp.prev is None or cp.prev < offset)
        and cp.checkpoint_bytes <= offset
        and (cp.message_count == 0) == (not cp.recent)
    )


class LogReader(Protocol):
    """Random access to a log's bytes by offset (:class:`awl.store._logmap.LogMap`, or
    the few reads a listing makes)."""

    def byte(self, pos: int) -> int:
        """The byte at ``pos``."""
        ...

    def find(self, sub: bytes, start: int, end: int) -> int:
        """The offset of ``sub`` in ``[start, end)``, or -1."""
        ...

    def view(self, start: int, end: int) -> bytes | memoryview:
        """The bytes ``[start, end)``."""
        ...


def holds_message(log: LogReader, offset: int, length: int, entry_id: str) -> bool:
    """Whether the line at ``offset`` is the message entry with this id."""
    # How awl writes a message: checked at memory speed.  Any other form is parsed.
    awl_form = b'{"type":"message","id":' + orjson.dumps(entry_id) + b","
    if length > len(awl_form) and bytes(log.view(offset, offset + len(awl_form))) == awl_form:
        return True
    try:
        obj = load_object(log.view(offset, offset + length))
    except FormatError:
        return False
    return obj.get("type") == "message" and obj.get("id") == entry_id


def checkpoint_locates(cp: Checkpoint, log: LogReader, body: int) -> bool:
    """Whether a fitting checkpoint's (:func:`checkpoint_fits`) leaf is where it says.

    Its ``recent`` locations must be in file order, none empty; the last
    must be one whole line (a newline before and after it, none inside)
    holding the message it names.  The leaf is the last entry of the tree:
    that message, or the last of the tree entries between it and this
    checkpoint, which must be entries of other types each under the one
    before (the first under the message), the last being ``leafId``.  A checkpoint
    without recent messages must have no entries at all, and none may come
    between the header (``body`` is where it ends) and the checkpoint.  A
    checkpoint believed past a leaf it misplaces would make a writer hang
    the next message off the wrong entry, and the messages after it would
    drop out of the conversation.  An open and a listing make these same
    checks, so they believe the same checkpoints; the other locations are
    checked by the open as it takes them (:func:`whole_lines_from`) and
    again by whoever reads them.
    """
    after = 0  # where the next location may start
    for o, n, _line, _id in cp.recent:
        if n == 0 or o < after:
            return False
        after = o + n + 1
    last: str | None = None  # the last tree entry so far: the leaf, at the end
    if cp.recent:
        o, n, _line, last = cp.recent[-1]
        if o < 1 or log.byte(o - 1) != 0x0A or log.byte(o + n) != 0x0A:
            return False
        if log.find(b"\n", o, o + n) >= 0 or not holds_message(log, o, n, last):
            return False
        pos = after
    elif cp.entry_count or cp.leaf_id is not None:
        return False  # a leaf no location vouches for
    else:
        pos = body
    chain = {last}  # an id met twice is no chain (a log that reuses one is indexed)
    while pos < cp.offset:
        end = log.find(b"\n", pos, cp.offset)
        if end < 0:
            return False
        kind = _kind_of(log.view(pos, end))
        if kind is None:
            return False
        if kind != _OUTSIDE:
            node, parent = kind
            if last is None or parent != last or node in chain:
                return False  # a node off the leaf's chain (or before any message)
            chain.add(node)
            last = node
        pos = end + 1
    return last == cp.leaf_id


_OUTSIDE = ("", "")


def _kind_of(line: bytes | memoryview) -> tuple[str, str | None] | None:
    """What a line between the last message and a checkpoint is: ``_OUTSIDE`` when it
    is sound and no tree entry (blank, a checkpoint, or an entry of another
    type without an ``id``, as the scanner tells nodes); ``(id, parentId)``
    for a tree entry of another type; None for anything else (a message, a
    header, a line that is not an entry)."""
    if not bytes(line).strip(b" \t\r"):
        return _OUTSIDE
    try:
        obj = load_object(line)
    except FormatError:
        return None
    kind = obj.get("type")
    if kind == "checkpoint":
        return _OUTSIDE
    if not isinstance(kind, str) or kind in ("message", "session"):
        return None
    if "id" not in obj:
        return _OUTSIDE
    node, parent = obj["id"], obj.get("parentId")
    if not isinstance(node, str) or not node or not (parent is None or isinstance(parent, str)):
        return None
    return node, parent


def whole_lines_from(recent: tuple[Location, ...], log: LogReader) -> tuple[Location, ...]:
    """The last of ``recent`` back to the first that is not a whole line (a
    newline before and after it): lines moved or resized since the checkpoint
    are not taken for messages, and not copied into the next checkpoint.
    The messages left out are found through the index when they are read."""
    k = len(recent)
    while k:
        o, n, _line, _id = recent[k - 1]
        if log.byte(o - 1) != 0x0A or log.byte(o + n) != 0x0A:
            break
        k -= 1
    return recent[k:]


def believed(
    log: LogReader, offset: int, body: int, size: int, header: SessionHeader
) -> tuple[Checkpoint, int] | None:
    """The checkpoint line at ``offset`` and its length, if it is to be believed
    (:func:`checkpoint_fits` and :func:`checkpoint_locates`), else None."""
    end = log.find(b"\n", offset, size)
    if end < 0:
        end = size
    try:
        cp = parse_checkpoint(load_object(log.view(offset, end)))
    except FormatError:
        return None
    if not checkpoint_fits(cp, offset, body, header) or not checkpoint_locates(cp, log, body):
        return None
    return cp, end - offset


# ── writing ──

CHECKPOINT_SEARCH = 64 << 10
"""How far back from the end an open looks for the last checkpoint line.

Resume can use one only when no tree entry follows it, so it is almost
always the last line or close to it; one further back is found in the
index, which a log with entries after its checkpoint needs anyway."""


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """When a writer appends a checkpoint line.

    During a session, once ``min_tail`` bytes and ``spacing`` times the
    last checkpoint's size follow it; at a clean close (and a writer's open
    of a log that needs one) whenever tree entries follow it.  Never when
    readers could not locate the leaf (:func:`checkpoint_locates`), nor when checkpoint lines would
    exceed ``budget`` of the log's bytes; periodic ones use at most half
    of it, so the one written at close still fits.
    An open looks for the last one in the last ``search`` bytes.
    """

    min_tail: int = 64 * 1024
    budget: float = 0.01
    spacing: int = 200
    search: int = CHECKPOINT_SEARCH

    def line(
        self,
        state: SessionState,
        header: SessionHeader,
        size: int,
        *,
        closing: bool,
        newline_first: bool = False,
        timestamp: str | None = None,
    ) -> bytes | None:
        """The checkpoint line to write now at the end of a log of ``size`` bytes
        in ``state`` (after a newline when ``newline_first``), or None;
        ``timestamp`` defaults to now."""
        mark = state.mark
        if not state.entry_count or (not mark.nodes_since and mark.offset is not None):
            return None
        if state.detached:
            return None  # a branch made current: the log's last entry is another
        if not state.recent or (state.recent[-1].id != state.leaf and not state.leaf_chained):
            # No message locates the leaf, or entries of other types after the last
            # message do not chain it to the leaf: readers would not believe the
            # line (checkpoint_locates), so none is written, and an open of
            # such a log takes the index path.
            return None
        tail = size - mark.end
        if not closing and tail < max(self.min_tail, self.spacing * mark.length):
            return None
        line = serialize_checkpoint(
            Checkpoint(
                timestamp=format_timestamp() if timestamp is None else timestamp,
                offset=size + (1 if newline_first else 0),
                line=state.line_count,
                session_id=header.id,
                created=header.timestamp,
                leaf_id=state.leaf,
                provider=state.provider,
                model=state.model,
                message_count=state.message_count,
                entry_count=state.entry_count,
                last_activity=state.last_activity,
                first_prompt=state.first_prompt,
                recent=state.recent[-RECENT:],
                checkpoint_bytes=mark.bytes,
                prev=mark.offset,
                free_ids=state.free_ids,
            )
        )
        if not closing and tail < self.spacing * len(line):
            return None
        if mark.bytes + len(line) > self.budget * (size + len(line)):
            return None
        return line
