"""The entry tree of a log, as arrays over its tree-node lines.

Which entry is whose parent, which ids exist, the branch from the root to a
leaf: computed from the scanner's records with numpy, linked natively in
the common case (hex ids, parents before children), checked otherwise (ids
unique, parents present, no cycles).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from . import scanner
from ._lines import Problems
from ._numpy import np, npt
from ._scanner_abi import Records


class LogBytes(Protocol):
    """What the index reads a log through (:class:`awl.store._logmap.LogMap`)."""

    def scan(self, start: int, end: int) -> Records:
        """Scanner records of the lines in ``[start, end)``."""
        ...

    def view(self, start: int, end: int) -> memoryview:
        """The bytes ``[start, end)``."""
        ...


IntArray = npt.NDArray[np.int64]

# Ids that are not 8 lowercase hex characters get keys above this, numbered
# in order of first appearance; hex ids are their own value.
SLOW_KEY_BASE = 1 << 32
NULL_KEY = -1


@dataclass(slots=True)
class Tree:
    """The entry tree of a log, as arrays over its tree-node lines."""

    rows: IntArray  # line index of each node, in file order
    keys: IntArray  # key of each node's id
    parent_pos: IntArray  # position (into rows) of each node's parent, -1 for a root
    slow_ids: dict[str, int]  # non-hex id text -> key
    slow_names: dict[int, str]  # key -> non-hex id text
    # The keys sorted, and the node position of each: for looking ids up,
    # made on the first lookup (an open that only reads the branch needs none).
    _sorted: tuple[IntArray, IntArray] | None = None

    def _lookup(self) -> tuple[IntArray, IntArray]:
        if self._sorted is None:
            order = np.argsort(self.keys, kind="stable")
            self._sorted = (self.keys[order], order.astype(np.int64))
        return self._sorted

    def key_of(self, entry_id: str) -> int | None:
        """The key of an id, or None when the id cannot be in this tree."""
        if len(entry_id) == 8 and all(c in "0123456789abcdef" for c in entry_id):
            return int(entry_id, 16)
        return self.slow_ids.get(entry_id)

    def pos_of(self, entry_id: str) -> int | None:
        """The node position of an id, or None."""
        key = self.key_of(entry_id)
        if key is None:
            return None
        sorted_keys, sorted_pos = self._lookup()
        i = int(np.searchsorted(sorted_keys, key))
        if i < len(sorted_keys) and int(sorted_keys[i]) == key:
            return int(sorted_pos[i])
        return None

    def id_at(self, pos: int) -> str:
        """The id text of the node at ``pos``."""
        key = int(self.keys[pos])
        if key >= SLOW_KEY_BASE:
            return self.slow_names[key]
        return f"{key:08x}"

    def __contains__(self, entry_id: object) -> bool:
        return isinstance(entry_id, str) and self.pos_of(entry_id) is not None

    def __len__(self) -> int:
        return len(self.rows)

    def children(self, pos: int) -> IntArray:
        """Node positions whose parent is the node at ``pos``, in file order."""
        return np.flatnonzero(self.parent_pos == pos).astype(np.int64)

    def branch(self, leaf_pos: int) -> IntArray:
        """Node positions from the root to ``leaf_pos``, root first."""
        n = leaf_pos + 1
        parents = self.parent_pos[:n]
        # The common case, a linear chain in file order, needs no walk.
        if n and parents[0] == -1 and bool(np.all(parents[1:] == np.arange(n - 1))):
            return np.arange(n, dtype=np.int64)
        path: list[int] = []
        pos = leaf_pos
        pp = self.parent_pos
        while pos != -1:
            path.append(pos)
            pos = int(pp[pos])
        path.reverse()
        return np.asarray(path, dtype=np.int64)


def _slow_field(buf: LogBytes, rec: Any, name: str) -> tuple[Any, str | None]:
    start = int(rec["offset"])
    value = orjson.loads(buf.view(start, start + int(rec["length"]))).get(name)
    if name == "id" and (not isinstance(value, str) or not value):
        return None, "entry 'id' must be a non-empty string"
    if name == "parentId" and value is not None and (not isinstance(value, str) or not value):
        return None, "'parentId' must be a non-empty string or null"
    return value, None


def build_tree(
    records: Records,
    buf: LogBytes,
    path: str | os.PathLike[str],
    problems: Problems | None = None,
) -> Tree:
    """Derive and check the entry tree: ids unique, parents exist, no cycles.

    By default the first problem raises CorruptSession; with a collecting
    :class:`Problems` every one is reported and the tree is still returned
    (with offending links cut), for ``awl reindex --verify``.
    """
    linked = scanner.link_tree(records)
    if linked is not None:
        # The common case, linked by the native scanner: hex ids, no
        # duplicates, every parent earlier in the file, so no cycle either.
        rows, parent_pos = linked
        return Tree(rows, records["id"][rows].astype(np.int64), parent_pos, {}, {})
    sink = problems if problems is not None else Problems(path)
    kind = records["kind"]
    flags = records["flags"]
    node_mask = ((kind == scanner.KIND_MESSAGE) | (kind == scanner.KIND_OTHER)) & (
        (flags & scanner.FLAG_ID) != 0
    )
    rows = np.flatnonzero(node_mask).astype(np.int64)
    nflags = flags[rows].astype(np.int64)
    keys = records["id"][rows].astype(np.int64)
    parents = records["parent"][rows].astype(np.int64)

    slow_ids: dict[str, int] = {}
    slow_names: dict[int, str] = {}

    def slow_key(text: str) -> int:
        key = slow_ids.get(text)
        if key is None:
            if len(text) == 8 and all(c in "0123456789abcdef" for c in text):
                return int(text, 16)
            key = SLOW_KEY_BASE + len(slow_ids)
            slow_ids[text] = key
            slow_names[key] = text
        return key

    def name_of(key: int) -> str:
        return slow_names.get(key, f"{key:08x}")

    for j in np.flatnonzero((nflags & scanner.FLAG_ID_HEX) == 0):
        row = int(rows[j])
        value, err = _slow_field(buf, records[row], "id")
        if err is not None:
            sink.report(row + 1, err)
            value = f"\0bad-id-line-{row + 1}"  # unique, cannot clash with a real id
        keys[j] = slow_key(value)
    has_parent = (nflags & scanner.FLAG_PARENT) != 0
    parents[~has_parent | ((nflags & scanner.FLAG_PARENT_NULL) != 0)] = NULL_KEY
    slow_parent = has_parent & (
        (nflags & (scanner.FLAG_PARENT_NULL | scanner.FLAG_PARENT_HEX)) == 0
    )
    for j in np.flatnonzero(slow_parent):
        row = int(rows[j])
        value, err = _slow_field(buf, records[row], "parentId")
        if err is not None:
            sink.report(row + 1, err)
        parents[j] = NULL_KEY if value is None else slow_key(value)

    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    dup = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    if len(dup):
        # Report each later line of a duplicate, naming the first line of its id.
        seen_first: dict[int, int] = {}
        reports = []
        for d in dup:
            a, b = int(order[d]), int(order[d + 1])
            key = int(keys[b])
            first = seen_first.setdefault(key, min(a, b))
            reports.append((max(a, b), key, first))
        for later, key, first in sorted(reports):
            sink.report(
                int(rows[later]) + 1,
                f"duplicate entry id {name_of(key)!r} (first on line {int(rows[first]) + 1})",
            )

    parent_pos = np.full(len(rows), -1, dtype=np.int64)
    has = parents != NULL_KEY
    if bool(has.any()):
        want = parents[has]
        idx = np.searchsorted(sorted_keys, want)
        idx_clipped = np.minimum(idx, max(len(sorted_keys) - 1, 0))
        found = (idx < len(sorted_keys)) & (sorted_keys[idx_clipped] == want)
        has_rows = np.flatnonzero(has)
        for miss in np.flatnonzero(~found):
            node = int(has_rows[int(miss)])
            sink.report(
                int(rows[node]) + 1, f"parentId {name_of(int(parents[node]))!r} names no entry"
            )
        parent_pos[has_rows[found]] = order[idx_clipped[found]]

    tree = Tree(rows, keys, parent_pos, slow_ids, slow_names, (sorted_keys, order.astype(np.int64)))
    forward = np.flatnonzero(parent_pos >= np.arange(len(rows)))
    if len(forward):
        _check_cycles(tree, [int(j) for j in forward], sink)
    return tree


def _check_cycles(tree: Tree, starts: list[int], sink: Problems) -> None:
    # Only nodes whose parent comes at or after them can be on a cycle; walk
    # from each, marking finished nodes so the total work stays linear.
    done: set[int] = set()
    pp = tree.parent_pos
    for start in starts:
        seen: list[int] = []
        on_path: set[int] = set()
        pos = start
        while pos != -1 and pos not in done:
            if pos in on_path:
                sink.report(
                    int(tree.rows[pos]) + 1, f"parent cycle through entry {tree.id_at(pos)!r}"
                )
                pp[pos] = -1  # cut the cycle so the rest can be walked
                break
            on_path.add(pos)
            seen.append(pos)
            pos = int(pp[pos])
        done.update(seen)
