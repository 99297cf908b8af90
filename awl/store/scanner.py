"""Line index and JSON validation for session logs, native with a pure fallback.

A buffer (bytes, bytearray, memoryview or mmap, read-only allowed) holds a
JSONL log.  Lines are the maximal byte ranges separated by ``b"\\n"``; a
record covers ``[offset, offset + length)`` without the newline.  A range
ending in ``"\\n"`` has no empty final line; one that does not end in it has a
final line flagged :data:`FLAG_UNTERMINATED`.

Two implementations give identical results: ``"native"`` (the C scanner in
``native/scanner.c``, loaded through cffi as :mod:`awl._native`) and
``"fallback"`` (numpy for line starts, orjson per line).  orjson is the
oracle for validity: a line is a valid object exactly when ``orjson.loads``
returns a dict for it.  ``AWL_NATIVE=0`` in the environment at import forces
the fallback.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Protocol

from . import _native_loader
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
    MAX_DEPTH,
    ROLE_ASSISTANT,
    ROLE_NONE,
    ROLE_OTHER,
    ROLE_SYSTEM,
    ROLE_USER,
    BufferLike,
    EntryFields,
    IntArray,
    Records,
    concat_records,
)
from ._scanner_fallback import FallbackScanner
from ._scanner_native import NativeScanner

__all__ = [
    "ENTRY_FIELDS",
    "FLAG_ID",
    "FLAG_ID_HEX",
    "FLAG_PARENT",
    "FLAG_PARENT_HEX",
    "FLAG_PARENT_NULL",
    "FLAG_UNTERMINATED",
    "IMPLEMENTATION",
    "INDEX_DTYPE",
    "INSTRUCTION_SETS",
    "KIND_BLANK",
    "KIND_CHECKPOINT",
    "KIND_INVALID",
    "KIND_MESSAGE",
    "KIND_OTHER",
    "KIND_SESSION",
    "KIND_UNTYPED",
    "MAX_DEPTH",
    "ROLE_ASSISTANT",
    "ROLE_NONE",
    "ROLE_OTHER",
    "ROLE_SYSTEM",
    "ROLE_USER",
    "BufferLike",
    "EntryFields",
    "Records",
    "available",
    "bracket_run",
    "concat_records",
    "digit_run",
    "entry_fields",
    "find",
    "find_last",
    "first_bad_line",
    "instruction_set",
    "limit_instruction_set",
    "line_starts",
    "link_tree",
    "scan",
    "use",
    "validate",
]


class _Impl(Protocol):
    """What each implementation provides; ranges are already checked."""

    name: str

    def line_starts(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.uint64]: ...

    def validate(self, mv: memoryview, start: int, end: int) -> bool: ...

    def scan(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.void]: ...

    def find_last(self, mv: memoryview, type_name: str, start: int, end: int) -> int | None: ...

    def find(self, mv: memoryview, needle: bytes, start: int, end: int) -> int: ...

    def digit_run(self, buf: bytes | memoryview, n: int, start: int, end: int) -> int: ...

    def bracket_run(
        self, buf: bytes | memoryview, n: int, start: int, end: int, before: int
    ) -> int: ...

    def entry_fields(
        self, mv: memoryview, start: int, end: int, trusted: bool
    ) -> EntryFields | None: ...

    def link_tree(self, records: npt.NDArray[Any]) -> tuple[IntArray, IntArray] | None: ...

    def first_bad_line(self, records: npt.NDArray[Any], header: bool) -> int | None: ...


def _bytes_view(buf: BufferLike) -> memoryview:
    """A flat unsigned-byte view of ``buf`` (no copy)."""
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.format not in ("B", "b", "c"):
        mv = mv.cast("B")  # raises TypeError for non-contiguous buffers
    return mv


def _range(mv: memoryview, start: int, end: int | None) -> tuple[int, int]:
    size = mv.nbytes
    stop = size if end is None else end
    if not 0 <= start <= stop <= size:
        raise ValueError(f"bad range [{start}, {end}) for a buffer of {size} bytes")
    return start, stop


def _line_range(mv: memoryview, start: int, end: int | None) -> tuple[int, int]:
    """Like :func:`_range`, and a non-empty range must start at a line start."""
    lo, hi = _range(mv, start, end)
    if 0 < lo < hi and mv[lo - 1] != 0x0A:
        raise ValueError(f"offset {lo} is not a line start")
    return lo, hi


def line_starts(buf: BufferLike, start: int = 0, end: int | None = None) -> npt.NDArray[np.uint64]:
    """Absolute start offsets of the lines of ``buf[start:end]``.

    ``start`` must be 0 or follow a newline.  An empty range has no lines;
    a final newline does not start an empty line.
    """
    with _bytes_view(buf) as mv:
        lo, hi = _line_range(mv, start, end)
        return _active.line_starts(mv, lo, hi)


def validate(buf: BufferLike, start: int = 0, end: int | None = None) -> bool:
    """True if ``buf[start:end]`` is exactly one JSON object orjson accepts.

    Surrounding JSON whitespace (space, tab, CR, LF) is allowed; any other
    value (array, string, number...) or trailing content is not.
    """
    with _bytes_view(buf) as mv:
        lo, hi = _range(mv, start, end)
        return _active.validate(mv, lo, hi)


def scan(buf: BufferLike, start: int = 0, end: int | None = None) -> npt.NDArray[np.void]:
    """One :data:`INDEX_DTYPE` record per line of ``buf[start:end]``.

    Offsets are absolute.  ``start`` must be 0 or follow a newline.  Each
    record carries the line's kind, role, id/parent and flags (see the
    ``KIND_*``, ``ROLE_*`` and ``FLAG_*`` constants).
    """
    with _bytes_view(buf) as mv:
        lo, hi = _line_range(mv, start, end)
        return _active.scan(mv, lo, hi)


def find_last(
    buf: BufferLike, type_name: str, start: int = 0, end: int | None = None
) -> int | None:
    """Offset of the last line of ``buf[start:end]`` that is a valid object
    whose top-level ``"type"`` equals ``type_name``, or None.

    ``start`` must be 0 or follow a newline.  The search runs backward from
    ``end``, so it is cheap when the match is near the end.
    """
    with _bytes_view(buf) as mv:
        lo, hi = _line_range(mv, start, end)
        return _active.find_last(mv, type_name, lo, hi)


def find(buf: BufferLike, needle: bytes, start: int = 0, end: int | None = None) -> int:
    """Offset of the first occurrence of ``needle`` in ``buf[start:end]``, or -1.

    ``bytes.find`` at memory speed (CPython's skip search crawls through
    JSON, where a needle's first and last bytes, quotes, are common), except
    that a range outside the buffer raises ValueError, as everywhere here.
    """
    with _bytes_view(buf) as mv:
        lo, hi = _range(mv, start, end)
        return _active.find(mv, needle, lo, hi)


def digit_run(buf: BufferLike, n: int, start: int = 0, end: int | None = None) -> int:
    """Offset of the first run of at least ``n`` ASCII digits in ``buf[start:end]``
    (where it starts, or ``start`` when the run is cut there), or -1.

    A JSON integer that 64 bits cannot hold, which orjson reads as the
    nearest double, has 19 digits or more: a line with no run of 19 holds
    none.  Natively it looks at one byte in ``n`` where there are no digits;
    a ``bytes`` line as a whole is the fast case (no buffer is made).
    """
    if n < 0:
        raise ValueError(f"a run of {n} digits")
    if type(buf) is bytes and start == 0 and end is None:
        return _active.digit_run(buf, n, 0, len(buf))
    with _bytes_view(buf) as mv:
        lo, hi = _range(mv, start, end)
        return _active.digit_run(mv, n, lo, hi)


def bracket_run(
    buf: BufferLike, n: int, start: int = 0, end: int | None = None, *, before: int = 0
) -> int:
    """Offset of the byte of ``buf[start:end]`` at which the line it is in has held
    ``n`` bytes that are ``[`` or ``{``, or -1; ``before`` of them are counted
    ahead of ``start`` (the part of its line that came before it).

    A JSON value nested ``n`` deep holds ``n`` such bytes at least: a line
    with fewer is no deeper, and only the lines found need their depth
    counted.  Natively a memory-speed pass; a ``bytes`` buffer as a whole is
    the fast case (no buffer is made).
    """
    if n < 0 or before < 0:
        raise ValueError(f"a run of {n} brackets, {before} before")
    if type(buf) is bytes and start == 0 and end is None:
        return _active.bracket_run(buf, n, 0, len(buf), before)
    with _bytes_view(buf) as mv:
        lo, hi = _range(mv, start, end)
        return _active.bracket_run(mv, n, lo, hi, before)


def entry_fields(
    buf: BufferLike, start: int = 0, end: int | None = None, *, trusted: bool = False
) -> EntryFields | None:
    """The top-level ``timestamp``, ``provider`` and ``model`` of one entry line.

    Each is its string value, or None when absent or not a string.  The
    whole result is None when ``buf[start:end]`` is not a valid object.  An
    entry's big content is not decoded: this is how an open learns the active
    model and the last activity without parsing a large tool result.

    ``trusted=True`` says the range is a line :func:`scan` accepted (the
    index says so): the native scanner then skips string bodies without
    validating them again.  Given anything else, the answer is unspecified.
    """
    with _bytes_view(buf) as mv:
        lo, hi = _range(mv, start, end)
        return _active.entry_fields(mv, lo, hi, trusted)


def first_bad_line(records: npt.NDArray[Any], header: bool) -> int | None:
    """The index of the first record that is not an acceptable log line, or None.

    Not acceptable: invalid JSON, no string ``type``, a second session header,
    a message without ``id``, ``parentId`` or a known role; with ``header``,
    record 0 must be the session header.  :func:`awl.store._lines.check_lines` says
    which problem it is.
    """
    return _active.first_bad_line(records, header)


def link_tree(records: npt.NDArray[Any]) -> tuple[IntArray, IntArray] | None:
    """The tree links of an index's records, when they are the common case.

    Returns ``(rows, parent_pos)``: the record index of each tree node (a
    message or other typed entry with an id, in file order) and the node
    position of its parent (-1 for a root).  None when the caller must link
    the tree itself (:func:`awl.store._tree.build_tree`): an id or parentId that is
    not 8 lowercase hex digits, a duplicate, a parent that is missing or not
    earlier in the file, or no native scanner.
    """
    return _active.link_tree(records)


def available() -> tuple[str, ...]:
    """Names of the usable implementations, preferred first."""
    return tuple(_impls)


INSTRUCTION_SETS: Final = _native_loader.INSTRUCTION_SETS
"""What the native scanner's string loop can run on, by its level in scanner.h."""


def instruction_set() -> str | None:
    """What the native scanner runs on: ``"avx2"``, ``"sse2"`` or ``"portable"``.

    The best the CPU has among those compiled in, chosen at run time; None
    when the native module is not loaded.  Results never depend on it.
    """
    native = _impls.get("native")
    if not isinstance(native, NativeScanner):
        return None
    return INSTRUCTION_SETS[native.simd(-1)]


@contextmanager
def limit_instruction_set(name: str) -> Iterator[None]:
    """Run the native scanner on at most ``name`` inside the ``with`` block.

    For tests and benchmarks (the SSE2 path on a machine with AVX2).  A
    SIMD build cannot go below SSE2: ``"portable"`` runs SSE2 there, and only
    a build without SIMD (``-DAWL_NO_SIMD``) runs the portable code.  Not
    thread safe: the level is process-wide.  A no-op without the native
    module.
    """
    if name not in INSTRUCTION_SETS:
        raise ValueError(f"unknown instruction set {name!r} {INSTRUCTION_SETS}")
    native = _impls.get("native")
    if not isinstance(native, NativeScanner):
        yield
        return
    previous = native.simd(-1)
    native.simd(min(INSTRUCTION_SETS.index(name), previous))
    try:
        yield
    finally:
        native.simd(previous)


@contextmanager
def use(name: str) -> Iterator[None]:
    """Make implementation ``name`` the active one inside the ``with`` block.

    Meant for tests; not thread safe (it swaps a module global).
    """
    global _active, IMPLEMENTATION
    try:
        impl = _impls[name]
    except KeyError:
        raise ValueError(
            f"scanner implementation {name!r} is not available {available()}"
        ) from None
    saved = _active
    _active, IMPLEMENTATION = impl, impl.name
    try:
        yield
    finally:
        _active, IMPLEMENTATION = saved, saved.name


def _load_native(fallback: FallbackScanner) -> _Impl | None:
    """The native implementation, or None if it is disabled or not built."""
    native, why = _native_loader.load()
    if native is None:
        if why is not None:
            # Import happens once per process, so this warns once.
            warnings.warn(
                f"awl: the native scanner is not available ({why}); using the slower "
                "pure-Python fallback. Reinstall awl with a working C compiler to build it.",
                RuntimeWarning,
                stacklevel=2,
            )
        return None
    return NativeScanner(native, fallback)


def _load() -> dict[str, _Impl]:
    impls: dict[str, _Impl] = {}
    fallback = FallbackScanner()
    native = _load_native(fallback)
    if native is not None:
        impls[native.name] = native
    impls[fallback.name] = fallback
    return impls


_impls: Final[dict[str, _Impl]] = _load()
_active: _Impl = next(iter(_impls.values()))
IMPLEMENTATION: str = _active.name
"""Name of the active implementation: ``"native"`` or ``"fallback"``."""
