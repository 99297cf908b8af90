"""Deriving a session's state from what the log says: its last checkpoint, or its index.

Both are functions of the log's bytes; neither writes anything.  A state
from the index always equals a full replay (``docs/format.md``, "The
tree"); one from a checkpoint is what that checkpoint says, once an open
has found it believable (:func:`awl.store._checkpoint.believed`).
"""

from __future__ import annotations

import os

from . import scanner
from ._checkpoint import whole_lines_from
from ._entries import RECENT, Checkpoint, MessageEntry, SessionHeader, UnknownEntry
from ._ids import IdPermutation, IdWindow
from ._index import LogIndex
from ._logmap import LogMap, Passing
from ._numpy import np
from ._reader import entry_at_row, fields_at, locations, prompt_at
from ._state import CheckpointMark, SessionState
from ._tree import SLOW_KEY_BASE, IntArray, Tree

PathLike = str | os.PathLike[str]


def from_checkpoint(
    header: SessionHeader, cp: Checkpoint, cp_len: int, log: LogMap, tail_lines: int
) -> SessionState:
    """The state a believed checkpoint of ``cp_len`` bytes gives, ``tail_lines``
    lines (none of them tree entries) following it."""
    return SessionState(
        provider=cp.provider,
        model=cp.model,
        last_activity=cp.last_activity,
        leaf=cp.leaf_id,
        message_count=cp.message_count,
        entry_count=cp.entry_count,
        line_count=cp.line + 1 + tail_lines,
        first_prompt=cp.first_prompt,
        # Lines moved or resized since are not taken for messages, nor
        # copied into the next checkpoint: the index finds those.
        recent=whole_lines_from(cp.recent, log),
        mark=CheckpointMark(cp.offset, cp.offset + cp_len + 1, cp.checkpoint_bytes + cp_len + 1),
        free_ids=cp.free_ids,
        # Believed: any entries between its last message and it chain that to the leaf.
        leaf_chained=True,
    )


def from_index(
    header: SessionHeader,
    index: LogIndex,
    tree: Tree,
    log: LogMap,
    path: PathLike,
    cp: tuple[Checkpoint, int] | None = None,
    leaf_pos: int | None = None,
) -> SessionState:
    """The state of the whole log from its index; ``cp`` is its last believed
    checkpoint, if any (its first prompt and active model stand for the
    entries before it that the derivation then need not read).  The leaf is
    the last tree entry, or the one at ``leaf_pos`` (a branch made current).

    Raises CorruptSession for an entry the derivation must read and cannot.
    """
    rec = index.records
    kinds = rec["kind"]
    if cp is not None:
        checkpoint, cp_len = cp
        mark = CheckpointMark(
            checkpoint.offset,
            checkpoint.offset + cp_len + 1,
            checkpoint.checkpoint_bytes + cp_len + 1,
            int(np.count_nonzero(rec["offset"][tree.rows] > checkpoint.offset)),
        )
    else:
        # Checkpoints that were not usable still count against the budget.
        cps = np.flatnonzero(kinds == scanner.KIND_CHECKPOINT)
        mark = CheckpointMark(None, 0, int(rec["length"][cps].sum()) + len(cps), len(tree))
    state = SessionState.of_header(header, line_count=len(index), entry_count=len(tree), mark=mark)
    if not len(tree):
        return state
    leaf_pos = len(tree) - 1 if leaf_pos is None else leaf_pos
    branch_rows = tree.rows[tree.branch(leaf_pos)]
    msg_rows = branch_rows[kinds[branch_rows] == scanner.KIND_MESSAGE]
    cp_row = -1
    if cp is not None and cp[0].leaf_id is not None:
        pos = tree.pos_of(cp[0].leaf_id)
        if pos is not None:
            cp_row = int(tree.rows[pos])
    on_branch_cp = cp is not None and cp_row >= 0 and bool(np.any(branch_rows == cp_row))

    # Active model: the last user message on the branch, else the
    # checkpoint's, else the header's.
    provider, model = header.provider, header.model
    found = False
    users = msg_rows[rec["role"][msg_rows] == scanner.ROLE_USER]
    behind: Passing | None = None
    for k, r in enumerate(users[::-1]):
        row = int(r)
        if on_branch_cp and row < cp_row:
            break
        if k:  # a long walk holds a window of the log, not all it has read
            off = int(rec["offset"][row])
            behind = behind or log.passing(off)
            behind.at(off)
        # The scanner reads the two fields; the entry (often a large tool
        # result) is not decoded.
        _, p, m = fields_at(log, index, row, path)
        if p and m:
            provider, model, found = p, m, True
            break
    if not found and on_branch_cp and cp is not None:
        provider, model = cp[0].provider, cp[0].model

    first = cp[0].first_prompt if on_branch_cp and cp is not None else ""
    if not first:
        for r in users:
            first = prompt_at(log, index, int(r), path)
            if first:
                break

    leaf_row = int(tree.rows[leaf_pos])
    activity = header.timestamp
    stamp = fields_at(log, index, leaf_row, path)[0]
    if stamp is None:  # absent or not a string: the parse says which is wrong
        leaf_entry = entry_at_row(log, index, leaf_row, path)
        if isinstance(leaf_entry, MessageEntry | UnknownEntry) and leaf_entry.base is not None:
            stamp = leaf_entry.base.timestamp
    if stamp is not None:
        activity = stamp or header.timestamp

    free = None
    if cp is not None and cp[0].free_ids is not None:
        # The checkpoint's window, less the ids of the entries after it.
        window = IdWindow(IdPermutation(header.id), *cp[0].free_ids)
        after = tree.keys[rec["offset"][tree.rows] > cp[0].offset]
        window.skip(after[after < SLOW_KEY_BASE].tolist())
        free = window.bounds()

    return SessionState(
        provider=provider,
        model=model,
        last_activity=activity,
        leaf=tree.id_at(leaf_pos),
        message_count=len(msg_rows),
        entry_count=len(tree),
        line_count=len(index),
        first_prompt=first,
        recent=tuple(locations(index, tree, msg_rows[-RECENT:])),
        mark=mark,
        free_ids=free,
        leaf_chained=_leaf_chained(tree, branch_rows, msg_rows),
    )


def _leaf_chained(tree: Tree, branch_rows: IntArray, msg_rows: IntArray) -> bool:
    """Whether the tree entries after the branch's last message are the branch's
    rest, in file order (see :class:`SessionState`)."""
    if not len(msg_rows):
        return False
    last = int(msg_rows[-1])
    rest = branch_rows[int(np.flatnonzero(branch_rows == last)[0]) :]
    in_order = bool(np.all(rest[1:] > rest[:-1]))
    return in_order and int(np.count_nonzero(tree.rows > last)) == len(rest) - 1


def free_window(header: SessionHeader, tree: Tree) -> tuple[int, int]:
    """The widest window of id numbers none of the tree's ids uses (see :mod:`._ids`)."""
    keys = tree.keys[tree.keys < SLOW_KEY_BASE]  # only hex ids can equal a drawn one
    return IdWindow.around(IdPermutation(header.id), keys).bounds()
