"""The native scanner: a thin typed wrapper of ``native/scanner.c`` through cffi.

Output arrays are allocated in numpy and filled by C in chunks, so no Python
object is created per line.  Lines the C code flags as slow (escaped
relevant keys or values) get their fields from the fallback, which is
orjson's verdict.
"""

from __future__ import annotations

import concurrent.futures
import os
from typing import TYPE_CHECKING, Any

from ._numpy import np, npt
from ._scanner_abi import (
    FLAG_SLOW,
    FLAG_UNTERMINATED,
    INDEX_DTYPE,
    EntryFields,
    IntArray,
    concat_records,
)
from ._scanner_fallback import FallbackScanner
from ._scanner_fallback import load as _fallback_load
from ._scanner_fallback import object_fields as _object_fields

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

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


class NativeScanner:
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
        try:
            parts = [f.result() for f in futures]
        except BaseException:
            # Ctrl+C in this thread: the workers still hold views of the buffer,
            # and releasing it under them would raise BufferError over the
            # interrupt (a traceback instead of the one line a stop prints).
            concurrent.futures.wait(futures)
            raise
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
        if not len(out) or int(out["flags"].max()) < FLAG_SLOW:
            return out
        slow = np.flatnonzero(out["flags"] & FLAG_SLOW)
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

    def digit_run(self, buf: bytes | memoryview, n: int, start: int, end: int) -> int:
        """See :func:`digit_run`."""
        if isinstance(buf, bytes):
            return int(self._lib.awl_digit_run(buf, len(buf), start, end, n))
        with self._ffi.from_buffer("char[]", buf) as src:
            return int(self._lib.awl_digit_run(src, buf.nbytes, start, end, n))

    def bracket_run(
        self, buf: bytes | memoryview, n: int, start: int, end: int, before: int
    ) -> int:
        """See :func:`bracket_run`."""
        if isinstance(buf, bytes):
            return int(self._lib.awl_bracket_run(buf, len(buf), start, end, n, before))
        with self._ffi.from_buffer("char[]", buf) as src:
            return int(self._lib.awl_bracket_run(src, buf.nbytes, start, end, n, before))

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
