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

import mmap
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Protocol

from . import _native_loader
from ._numpy import np, npt

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

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
    "available",
    "concat_records",
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

ENTRY_FIELDS: Final = ("timestamp", "provider", "model")
"""The top-level members :func:`entry_fields` reads, in its order."""

EntryFields = tuple[str | None, str | None, str | None]
"""An entry's :data:`ENTRY_FIELDS` (None: absent or not a string)."""

BufferLike = bytes | bytearray | memoryview | mmap.mmap
"""What the functions accept: anything exporting a contiguous byte buffer."""

IntArray = npt.NDArray[np.int64]

INDEX_DTYPE: Final = np.dtype(
    [
        ("offset", "<u8"),
        ("length", "<u8"),
        ("id", "<u4"),
        ("parent", "<u4"),
        ("flags", "<u2"),
        ("kind", "u1"),
        ("role", "u1"),
        ("_pad", "V4"),
    ]
)
"""One record per line; 32 bytes, the layout of ``awl_record`` in scanner.h."""

KIND_INVALID: Final = 0
"""Not exactly one valid JSON object (orjson's verdict)."""
KIND_BLANK: Final = 1
"""Empty, or only spaces, tabs and carriage returns."""
KIND_SESSION: Final = 2
"""Top-level ``"type": "session"``."""
KIND_MESSAGE: Final = 3
"""Top-level ``"type": "message"``."""
KIND_CHECKPOINT: Final = 4
"""Top-level ``"type": "checkpoint"``."""
KIND_OTHER: Final = 5
"""A valid object whose ``"type"`` is another string."""
KIND_UNTYPED: Final = 6
"""A valid object without a ``"type"`` key, or whose type is not a string."""

ROLE_NONE: Final = 0
"""No ``"message"`` object, or no ``"role"`` in it (also for non-messages)."""
ROLE_SYSTEM: Final = 1
"""``message.role == "system"``."""
ROLE_USER: Final = 2
"""``message.role == "user"``."""
ROLE_ASSISTANT: Final = 3
"""``message.role == "assistant"``."""
ROLE_OTHER: Final = 4
"""``message.role`` is another string, or not a string."""

FLAG_ID: Final = 1
"""The top-level ``"id"`` key is present (any type)."""
FLAG_ID_HEX: Final = 2
"""``id`` is 8 lowercase hex digits; the record's ``id`` holds its value."""
FLAG_PARENT: Final = 4
"""The top-level ``"parentId"`` key is present."""
FLAG_PARENT_NULL: Final = 8
"""``parentId`` is null."""
FLAG_PARENT_HEX: Final = 16
"""``parentId`` is 8 lowercase hex digits; ``parent`` holds its value."""
FLAG_UNTERMINATED: Final = 32
"""The line is the last of the range and has no newline."""

_FLAG_SLOW: Final = 0x8000
# Internal to the native path: the C code saw escapes in a relevant key or
# value and left the fields to Python.  Never visible after the facade.

MAX_DEPTH: Final = 1024
"""Deepest nesting of arrays/objects orjson accepts (1025 is rejected)."""


def concat_records(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """Join arrays of :data:`INDEX_DTYPE` records into a new one.

    numpy copies structured records field by field (4,000 of them take
    about 0.2 ms); as bytes the same copy is a memcpy.
    """
    if not parts:
        return np.zeros(0, INDEX_DTYPE)
    raw = [np.ascontiguousarray(p).view(np.uint8) for p in parts]
    return np.concatenate(raw).view(INDEX_DTYPE)


class _Impl(Protocol):
    """What each implementation provides; ranges are already checked."""

    name: str

    def line_starts(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.uint64]: ...

    def validate(self, mv: memoryview, start: int, end: int) -> bool: ...

    def scan(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.void]: ...

    def find_last(self, mv: memoryview, type_name: str, start: int, end: int) -> int | None: ...

    def find(self, mv: memoryview, needle: bytes, start: int, end: int) -> int: ...

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
    record 0 must be the session header.  :func:`awl.index.check_lines` says
    which problem it is.
    """
    return _active.first_bad_line(records, header)


def link_tree(records: npt.NDArray[Any]) -> tuple[IntArray, IntArray] | None:
    """The tree links of an index's records, when they are the common case.

    Returns ``(rows, parent_pos)``: the record index of each tree node (a
    message or other typed entry with an id, in file order) and the node
    position of its parent (-1 for a root).  None when the caller must link
    the tree itself (:func:`awl.index.build_tree`): an id or parentId that is
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
    if not isinstance(native, _NativeScanner):
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
    if not isinstance(native, _NativeScanner):
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


_PARALLEL_MIN = 16 << 20
"""Ranges at least this large are split across two threads."""

_CORES = os.cpu_count() or 1
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor  # only large scans need it

        _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="awl-scan")
    return _POOL


class _NativeScanner:
    """cffi wrapper around native/scanner.c.

    Output arrays are allocated in numpy and filled by C in chunks, so no
    Python object is created per line.  Lines the C code flags as slow
    (escaped relevant keys or values) get their fields from the fallback.
    """

    name = "native"

    def __init__(self, module: Any, fallback: FallbackScanner) -> None:
        self._ffi = module.ffi
        self._lib = module.lib
        self._fallback = fallback

    def _fill(
        self,
        mv: memoryview,
        start: int,
        end: int,
        dtype: np.dtype[Any],
        ctype: str,
        fn: Any,
    ) -> npt.NDArray[Any]:
        """Run a chunked C producer (awl_line_starts / awl_scan) over a range."""
        ffi = self._ffi
        # Sized for lines of 256 bytes and more: a one-line scan (a torn-tail
        # check, an append) need not allocate 4,096 records.
        out = np.empty(max(16, min((end - start) // 256, 4096)), dtype)
        count, pos = 0, start
        next_pos = ffi.new("size_t *")
        with ffi.from_buffer("uint8_t[]", mv) as src:
            while pos < end:
                if count == len(out):
                    # Grow to the estimate from the density seen so far.
                    guess = count * (end - start) // max(pos - start, 1)
                    bigger = np.empty(max(guess + guess // 8 + 64, 2 * count), dtype)
                    # As bytes: numpy copies structured records field by field.
                    bigger.view(np.uint8)[: count * dtype.itemsize] = out.view(np.uint8)[
                        : count * dtype.itemsize
                    ]
                    out = bigger
                with ffi.from_buffer(ctype, out, require_writable=True) as dst:
                    count += fn(src, mv.nbytes, pos, end, dst + count, len(out) - count, next_pos)
                pos = next_pos[0]
        if count < len(out) // 2 and len(out) > 64:
            # Don't pin a mostly empty buffer; copied as bytes (see above).
            return out.view(np.uint8)[: count * dtype.itemsize].copy().view(dtype)
        return out[:count]

    def _halves(self, mv: memoryview, start: int, end: int) -> list[tuple[int, int]] | None:
        """Two line-aligned halves of a large range, or None (not worth a thread)."""
        if end - start < _PARALLEL_MIN or _CORES < 2:
            return None
        pos = start + (end - start) // 2
        while pos < end:
            chunk = bytes(mv[pos : min(pos + 65536, end)])
            nl = chunk.find(b"\n")
            if nl >= 0:
                mid = pos + nl + 1
                return [(start, mid), (mid, end)] if mid < end else None
            pos += len(chunk)
        return None

    def _split(self, fn: Any, mv: memoryview, start: int, end: int) -> npt.NDArray[Any]:
        # cffi releases the GIL around each C call, so the two halves of a
        # large range are scanned on two cores at once.
        halves = self._halves(mv, start, end)
        if halves is None:
            result: npt.NDArray[Any] = fn(mv, start, end)
            return result
        futures = [_pool().submit(fn, mv, lo, hi) for lo, hi in halves]
        parts = [f.result() for f in futures]
        return concat_records(parts) if parts[0].dtype == INDEX_DTYPE else np.concatenate(parts)

    def line_starts(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.uint64]:
        """See :func:`line_starts`."""
        return self._split(self._line_starts, mv, start, end)

    def _line_starts(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.uint64]:
        return self._fill(
            mv, start, end, np.dtype(np.uint64), "uint64_t[]", self._lib.awl_line_starts
        )

    def simd(self, level: int) -> int:
        """``awl_simd``: set the instruction-set level (unless negative), return the one in use."""
        return int(self._lib.awl_simd(level))

    def first_bad_line(self, records: npt.NDArray[Any], header: bool) -> int | None:
        """See :func:`first_bad_line`."""
        recs = np.ascontiguousarray(records)
        with self._ffi.from_buffer("awl_record[]", recs) as rec:
            row = int(self._lib.awl_first_bad_line(rec, len(recs), int(header)))
        return None if row < 0 else row

    def link_tree(self, records: npt.NDArray[Any]) -> tuple[IntArray, IntArray] | None:
        """See :func:`link_tree`."""
        n = len(records)
        recs = np.ascontiguousarray(records)
        rows = np.empty(n, np.int64)
        parent_pos = np.empty(n, np.int64)
        table = np.empty(1 << max(4, (2 * n - 1).bit_length()), np.uint64)
        ffi = self._ffi
        with (
            ffi.from_buffer("awl_record[]", recs) as rec,
            ffi.from_buffer("int64_t[]", rows, require_writable=True) as r,
            ffi.from_buffer("int64_t[]", parent_pos, require_writable=True) as pp,
            ffi.from_buffer("uint64_t[]", table, require_writable=True) as t,
        ):
            nodes = int(self._lib.awl_link_tree(rec, n, r, pp, t, len(table)))
        if nodes < 0:
            return None
        return rows[:nodes], parent_pos[:nodes]

    def validate(self, mv: memoryview, start: int, end: int) -> bool:
        """See :func:`validate`."""
        with self._ffi.from_buffer("uint8_t[]", mv) as src:
            return bool(self._lib.awl_validate(src, mv.nbytes, start, end))

    def scan(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.void]:
        """See :func:`scan`."""
        return self._split(self._scan, mv, start, end)

    def _scan(self, mv: memoryview, start: int, end: int) -> npt.NDArray[np.void]:
        out = self._fill(mv, start, end, INDEX_DTYPE, "awl_record[]", self._lib.awl_scan)
        # The slow flag is the top bit: the largest flags value shows whether
        # any line has it, cheaper than finding them when none has.
        if not len(out) or int(out["flags"].max()) < _FLAG_SLOW:
            return out
        slow = np.flatnonzero(out["flags"] & _FLAG_SLOW)
        for i in slow.tolist():
            off, length = int(out["offset"][i]), int(out["length"][i])
            obj = _fallback_load(mv[off : off + length])
            if obj is None:  # would be a bug in scanner.c; fail loudly
                raise RuntimeError(f"native validator accepted a line orjson rejects at {off}")
            kind, role, flags, ident, parent = _object_fields(obj)
            out["kind"][i], out["role"][i], out["id"][i], out["parent"][i] = (
                kind,
                role,
                ident,
                parent,
            )
            out["flags"][i] = flags | (int(out["flags"][i]) & FLAG_UNTERMINATED)
        return out

    def find_last(self, mv: memoryview, type_name: str, start: int, end: int) -> int | None:
        """See :func:`find_last`."""
        ffi, lib = self._ffi, self._lib
        # surrogatepass: a lone surrogate can never equal a decoded JSON
        # string, and must not raise here either.
        want = type_name.encode("utf-8", "surrogatepass")
        uncertain = ffi.new("int *")
        next_pos = ffi.new("size_t *")
        one = ffi.new("uint64_t[1]")
        with ffi.from_buffer("uint8_t[]", mv) as src:
            while True:
                off = int(lib.awl_find_last(src, mv.nbytes, start, end, want, len(want), uncertain))
                if off < 0:
                    return None
                if not uncertain[0]:
                    return off
                # Escapes the C code does not decode: let orjson decide.
                lib.awl_line_starts(src, mv.nbytes, off, end, one, 1, next_pos)
                stop = next_pos[0]
                if stop > off and mv[stop - 1] == 0x0A:
                    stop -= 1
                if self._fallback.line_type_is(mv, off, stop, type_name):
                    return off
                end = off

    def find(self, mv: memoryview, needle: bytes, start: int, end: int) -> int:
        """See :func:`find`."""
        with self._ffi.from_buffer("uint8_t[]", mv) as src:
            want = needle if type(needle) is bytes else bytes(needle)  # cffi takes bytes only
            return int(self._lib.awl_find(src, mv.nbytes, start, end, want, len(want)))

    def entry_fields(
        self, mv: memoryview, start: int, end: int, trusted: bool
    ) -> EntryFields | None:
        """See :func:`entry_fields`."""
        ffi, lib = self._ffi, self._lib
        out = ffi.new("int64_t[6]")
        with ffi.from_buffer("uint8_t[]", mv) as src:
            if not lib.awl_entry_fields(src, mv.nbytes, start, end, int(trusted), out):
                return None
        spans = list(out)
        if -2 in spans:
            # escapes: orjson decodes
            return self._fallback.entry_fields(mv, start, end, trusted)
        ts, provider, model = (
            None if spans[i] < 0 else str(mv[spans[i] : spans[i + 1]], "utf-8") for i in (0, 2, 4)
        )
        return ts, provider, model


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
    return _NativeScanner(native, fallback)


def _load() -> dict[str, _Impl]:
    impls: dict[str, _Impl] = {}
    fallback = FallbackScanner()
    native = _load_native(fallback)
    if native is not None:
        impls[native.name] = native
    impls[fallback.name] = fallback
    return impls


# The fallback imports the constants above, hence this late import.
from ._scanner_fallback import FallbackScanner  # noqa: E402
from ._scanner_fallback import load as _fallback_load  # noqa: E402
from ._scanner_fallback import object_fields as _object_fields  # noqa: E402

_impls: Final[dict[str, _Impl]] = _load()
_active: _Impl = next(iter(_impls.values()))
IMPLEMENTATION: str = _active.name
"""Name of the active implementation: ``"native"`` or ``"fallback"``."""
