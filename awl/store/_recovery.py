"""What an open does before a session is ready: find where the log really ends,
which checkpoint to believe, and derive the state.

:func:`recover` reads; it writes nothing and returns a :class:`Recovery`.
A writer then cuts the torn tail it found (:meth:`LogFile.trim`), once the
rest of the log has been found sound.  The log is the only truth: a
checkpoint is believed only when it fits (``_checkpoint``), and the state
is derived from the whole index when there is none, or tree entries follow
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import scanner
from ._checkpoint import CHECKPOINT_SEARCH, believed
from ._derive import from_checkpoint, from_index
from ._entries import Checkpoint, SessionHeader
from ._fs import Env, default_env
from ._index import LogIndex
from ._index_keeper import IndexKeeper
from ._lines import check_lines
from ._logfile import LogFile
from ._logmap import torn_tail
from ._numpy import np
from ._state import SessionState
from ._tree import Tree


@dataclass(frozen=True, slots=True)
class Recovery:
    """What an open found: the state, how it was derived, and what to repair."""

    state: SessionState
    mode: str  # "checkpoint" (from the last one and the lines after it) or "index"
    torn_at: int | None  # where a torn last line starts (a writer cuts it)
    torn: int  # its bytes (for a reader, the bytes it ignores)
    tail_lines: int  # lines read after the checkpoint believed
    checkpoint: tuple[Checkpoint, int] | None  # the checkpoint believed, and its length


def recover(log: LogFile, keeper: IndexKeeper, search: int = CHECKPOINT_SEARCH) -> Recovery:
    """Read the log as an open does and derive its state (see the module's docstring).

    Sets ``log.size`` to the bytes that count and ``log.needs_newline``.
    Raises CorruptSession for a log it will not guess at.
    """
    assert log.fd is not None
    cut = 0
    if not log.read_only:
        # A writer maps the whole log: a long torn tail is found from its end and
        # left out of the map, as a reader leaves it, so that no page of it is
        # touched (LogFile.trim then copies it a piece at a time).
        cut = torn_tail(log.fd, log.size)
        log.size -= cut
    mm = log.map()
    size = log.size = min(log.size, len(mm))  # a reader may find the file shorter already
    torn = mm.cut or cut  # a long torn tail left unread
    torn_at = size if torn else None
    nl = mm.find(b"\n")
    body = nl + 1 if nl >= 0 else size  # where the header line ends
    last_kind: int | None = None
    last = size
    if nl < 0:
        log.needs_newline = True
    else:
        end = size - 1 if mm.byte(size - 1) == 0x0A else size
        last = mm.rfind(b"\n", 0, end) + 1
        if last >= body:
            rec = mm.scan(last, size)
            last_kind = int(rec["kind"][0])
            if last_kind == scanner.KIND_INVALID:
                # Everything below reads only up to the torn line.
                torn, torn_at = size - last, last
                log.size = size = last
                last_kind = None
            else:
                keeper.know_last_line(last, rec, size)
                if end == size:
                    log.needs_newline = True

    # Only the end of the log is searched for a checkpoint: one further back
    # is found in the index, which then has to be built anyway.
    start = body
    if size - search > body:
        nl_before = mm.find(b"\n", size - search - 1, size)
        start = nl_before + 1 if nl_before >= 0 else size
    off = None
    if last_kind == scanner.KIND_CHECKPOINT:
        off = last  # where a clean close leaves it: already scanned
    elif start < size and mm.find(b'"checkpoint"', start, size) >= 0:
        # A plain byte search first rules out most logs at memory speed; an
        # escaped type it misses is still found through the index.
        off = mm.find_last("checkpoint", start, size)
    cp = believed(mm, off, body, size, log.header) if off is not None else None

    tail_lines, tail_nodes = 0, 1
    if cp is not None:
        checkpoint, cp_len = cp
        tail_start = checkpoint.offset + cp_len + 1
        tail_nodes = 0
        if tail_start < size:
            tail = mm.scan(tail_start, size)
            check_lines(tail, log.path, checkpoint.line + 1, log=mm)
            tail_lines = len(tail)
            kinds = tail["kind"]
            is_node = (kinds == scanner.KIND_MESSAGE) | (kinds == scanner.KIND_OTHER)
            tail_nodes = int(np.count_nonzero(is_node & ((tail["flags"] & scanner.FLAG_ID) != 0)))
    if cp is not None and tail_nodes == 0:
        state = from_checkpoint(log.header, cp[0], cp[1], mm, tail_lines)
        return Recovery(state, "checkpoint", torn_at, torn, tail_lines, cp)

    def derive(index: LogIndex, tree: Tree) -> tuple[SessionState, tuple[Checkpoint, int] | None]:
        found = cp
        if found is None:
            rows = np.flatnonzero(index.records["kind"] == scanner.KIND_CHECKPOINT)
            if len(rows):
                at = int(index.records["offset"][rows[-1]])
                found = believed(mm, at, body, size, log.header)
        return from_index(log.header, index, tree, mm, log.path, found), found

    state, found = keeper.use(mm, log.fd, size, derive)
    return Recovery(state, "index", torn_at, torn, tail_lines, found)


def read_state(path: Path, env: Env | None = None) -> tuple[SessionHeader, SessionState, int]:
    """(header, state, bytes that count) of the log at ``path``, as a reader's open
    derives them: no lock taken, nothing written, nothing else kept."""
    log = LogFile.open(path, read_only=True, env=env or default_env())
    try:
        found = recover(log, IndexKeeper(path, log.env))
        return log.header, found.state, log.size
    finally:
        log.close()
