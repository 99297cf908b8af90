"""Pure Python/numpy scanner: the reference the native one must equal (private).

Line starts come from numpy (one vectorised comparison); validity and fields
come from ``orjson.loads`` per line, so this implementation is right by
construction: orjson *is* the definition of a valid line.  Ranges reaching
here are already checked by :mod:`awl.store.scanner`.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from ._numpy import np, npt
from ._scanner_abi import (
    ENTRY_FIELDS,
    FLAG_ID,
    FLAG_ID_HEX,
    FLAG_PARENT,
    FLAG_PARENT_HEX,
    FLAG_PARENT_NULL,
    FLAG_UNTERMINATED,
    INDEX_DTYPE,
    KIND_BLANK,
    KIND_CHECKPOINT,
    KIND_INVALID,
    KIND_MESSAGE,
    KIND_OTHER,
    KIND_SESSION,
    KIND_UNTYPED,
    ROLE_ASSISTANT,
    ROLE_NONE,
    ROLE_OTHER,
    ROLE_SYSTEM,
    ROLE_USER,
    EntryFields,
)

_KINDS: Final = {"session": KIND_SESSION, "message": KIND_MESSAGE, "checkpoint": KIND_CHECKPOINT}
_ROLES: Final = {"system": ROLE_SYSTEM, "user": ROLE_USER, "assistant": ROLE_ASSISTANT}
_HEX8: Final = re.compile(r"[0-9a-f]{8}")
_MISSING: Final = object()

Fields = tuple[int, int, int, int, int]
"""(kind, role, flags, id, parent) of one line; flags without UNTERMINATED."""

_INVALID: Final[Fields] = (KIND_INVALID, ROLE_NONE, 0, 0, 0)
_BLANK: Final[Fields] = (KIND_BLANK, ROLE_NONE, 0, 0, 0)


def load(line: memoryview) -> dict[str, Any] | None:
    """The line as a dict if orjson accepts it as one object, else None."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _hex8(value: object) -> int | None:
    if isinstance(value, str) and len(value) == 8 and _HEX8.fullmatch(value):
        return int(value, 16)
    return None


def object_fields(obj: dict[str, Any]) -> Fields:
    """Fields of a valid top-level object (duplicate keys: orjson kept the last)."""
    kind = KIND_UNTYPED
    typ = obj.get("type")
    if isinstance(typ, str):
        kind = _KINDS.get(typ, KIND_OTHER)
    role = ROLE_NONE
    if kind == KIND_MESSAGE:
        msg = obj.get("message")
        if isinstance(msg, dict):
            r = msg.get("role", _MISSING)
            if r is not _MISSING:
                role = _ROLES.get(r, ROLE_OTHER) if isinstance(r, str) else ROLE_OTHER
    flags = ident = parent = 0
    v = obj.get("id", _MISSING)
    if v is not _MISSING:
        flags |= FLAG_ID
        h = _hex8(v)
        if h is not None:
            flags |= FLAG_ID_HEX
            ident = h
    v = obj.get("parentId", _MISSING)
    if v is not _MISSING:
        flags |= FLAG_PARENT
        if v is None:
            flags |= FLAG_PARENT_NULL
        else:
            h = _hex8(v)
            if h is not None:
                flags |= FLAG_PARENT_HEX
                parent = h
    return kind, role, flags, ident, parent


def line_fields(line: memoryview) -> Fields:
    """Fields of one line (without its newline)."""
    obj = load(line)
    if obj is not None:
        return object_fields(obj)
    # Blank lines are never valid JSON, so only failures need the test.
    return _BLANK if not bytes(line).strip(b" \t\r") else _INVALID


def _starts(mv: memoryview, start: int, end: int) -> npt.NDArray[np.uint64]:
    if start == end:
        return np.zeros(0, np.uint64)
    region = np.frombuffer(mv, np.uint8, end - start, start)
    breaks = np.flatnonzero(region == 0x0A).astype(np.uint64)
    breaks += np.uint64(start + 1)
    if len(breaks) and breaks[-1] == end:
        breaks = breaks[:-1]  # a final newline starts no line
    out = np.empty(len(breaks) + 1, np.uint64)
    out[0] = start
    out[1:] = breaks
    return out


def _ends(mv: memoryview, starts: npt.NDArray[np.uint64], end: int) -> npt.NDArray[np.uint64]:
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:] - np.uint64(1)
        ends[-1] = end - 1 if mv[end - 1] == 0x0A else end
    return ends


def bad_line_mask(records: npt.NDArray[Any], header: bool) -> npt.NDArray[np.bool_]:
    """Which records are not acceptable log lines (the rule of scanner.c's
    awl_first_bad_line); with ``header``, record 0 must be the session header."""
    kind = records["kind"]
    flags = records["flags"]
    role = records["role"]
    bad: npt.NDArray[np.bool_] = (
        (kind == KIND_INVALID) | (kind == KIND_UNTYPED) | (kind == KIND_SESSION)
    )
    need = FLAG_ID | FLAG_PARENT
    bad |= (kind == KIND_MESSAGE) & (
        ((flags & need) != need) | (role == ROLE_NONE) | (role == ROLE_OTHER)
    )
    if header and len(bad):
        bad[0] = kind[0] != KIND_SESSION
    return bad


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{\n")
"""What :meth:`FallbackScanner.bracket_run` deletes: all but brackets and newlines."""


_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
"""A table for ``bytes.translate``: each ASCII digit to "0", every other byte to " "."""


class FallbackScanner:
    """numpy + orjson implementation of the scanner interface."""

    name = "fallback"

    def line_starts(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.uint64]:
        """See :func:`awl.scanner.line_starts`."""
        return _starts(mv, start, end)

    def validate(self, mv: memoryview, start: int, end: int) -> bool:
        """See :func:`awl.scanner.validate`."""
        return load(mv[start:end]) is not None

    def link_tree(
        self, records: npt.NDArray[Any]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
        """No shortcut here: :func:`awl.store._tree.build_tree` links the tree itself."""
        return None

    def first_bad_line(self, records: npt.NDArray[Any], header: bool) -> int | None:
        """See :func:`awl.scanner.first_bad_line`."""
        bad = np.flatnonzero(bad_line_mask(records, header))
        return int(bad[0]) if len(bad) else None

    def scan(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.void]:
        """See :func:`awl.scanner.scan`."""
        starts = _starts(mv, start, end)
        ends = _ends(mv, starts, end)
        out = np.zeros(len(starts), INDEX_DTYPE)
        out["offset"] = starts
        out["length"] = ends - starts
        if not len(starts):
            return out
        rows = [line_fields(mv[s:e]) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
        cols = np.array(rows, dtype=np.uint64).reshape(len(rows), 5)
        out["kind"] = cols[:, 0]
        out["role"] = cols[:, 1]
        out["flags"] = cols[:, 2]
        out["id"] = cols[:, 3]
        out["parent"] = cols[:, 4]
        if mv[end - 1] != 0x0A:
            out["flags"][-1] |= FLAG_UNTERMINATED
        return out

    def find_last(self, mv: memoryview, type_name: str, start: int, end: int) -> int | None:
        """See :func:`awl.scanner.find_last`."""
        starts = _starts(mv, start, end)
        ends = _ends(mv, starts, end)
        for s, e in zip(reversed(starts.tolist()), reversed(ends.tolist()), strict=True):
            obj = load(mv[s:e])
            if obj is not None and obj.get("type", _MISSING) == type_name:
                return int(s)
        return None

    def entry_fields(
        self, mv: memoryview, start: int, end: int, trusted: bool = False
    ) -> EntryFields | None:
        """See :func:`awl.scanner.entry_fields` (orjson decodes the line either way)."""
        obj = load(mv[start:end])
        if obj is None:
            return None
        ts, provider, model = (obj.get(k) for k in ENTRY_FIELDS)
        return (
            ts if isinstance(ts, str) else None,
            provider if isinstance(provider, str) else None,
            model if isinstance(model, str) else None,
        )

    def digit_run(self, buf: bytes | memoryview, n: int, start: int, end: int) -> int:
        """See :func:`awl.scanner.digit_run`: each digit made "0" and every other
        byte " ", then the run found as a string of n "0"s (a megabyte at a time,
        the pieces overlapping by n - 1 bytes so that no run is cut in two)."""
        if n == 0:
            return start
        if end - start < n:
            return -1  # (before a run of n is made: n may be huge)
        run, step, pos = b"0" * n, max(1 << 20, 2 * n), start
        while end - pos >= n:
            stop = min(end, pos + step + n - 1)
            hit = bytes(buf[pos:stop]).translate(_DIGITS).find(run)
            if hit >= 0:
                at = pos + hit
                while at > start and 0x30 <= buf[at - 1] <= 0x39:
                    at -= 1  # (only where the piece began inside the run)
                return at
            if stop == end:
                break
            pos += step
        return -1

    def bracket_run(
        self, buf: bytes | memoryview, n: int, start: int, end: int, before: int
    ) -> int:
        """See :func:`awl.scanner.bracket_run`: each line's brackets counted with
        every other byte deleted, a megabyte of whole lines at a time."""
        if n <= before:
            return start
        pos, held = start, before
        while pos < end:
            data = bytes(buf[pos : min(end, pos + (1 << 20))])
            if pos + len(data) < end:
                cut = data.rfind(b"\n")
                if cut < 0:  # a line longer than the piece: to its end
                    nl = bytes(buf[pos:end]).find(b"\n")
                    data = bytes(buf[pos : end if nl < 0 else pos + nl + 1])
                else:
                    data = data[: cut + 1]
            at = 0
            for piece in data.translate(None, _NOT_BRACKETS).split(b"\n"):
                stop = data.find(b"\n", at)
                stop = len(data) if stop < 0 else stop
                if held + len(piece) >= n:
                    for i in range(at, stop):
                        if data[i] | 0x20 == 0x7B:
                            held += 1
                            if held >= n:
                                return pos + i
                held, at = 0, stop + 1
            pos += len(data)
        return -1

    def find(self, mv: memoryview, needle: bytes, start: int, end: int) -> int:
        """See :func:`awl.scanner.find`."""
        if not needle:
            return start
        # In pieces that overlap by the needle's length less one, so that
        # no large range is copied at once and no match is cut in two.
        step = max(1 << 20, 2 * len(needle))
        pos = start
        while pos < end:
            stop = min(end, pos + step + len(needle) - 1)
            hit = bytes(mv[pos:stop]).find(needle)
            if hit >= 0:
                return pos + hit
            if stop == end:
                break
            pos += step
        return -1

    def line_type_is(self, mv: memoryview, start: int, end: int, type_name: str) -> bool:
        """True if ``mv[start:end]`` is a valid object whose type is ``type_name``."""
        obj = load(mv[start:end])
        return obj is not None and obj.get("type", _MISSING) == type_name
