"""Session ids (UUIDv7), and entry ids unique in their log without reading the others.

An entry id is 8 lowercase hex digits, random-looking (the format's rule),
and must differ from every other tree entry's id in the log.  Checking a
random draw against every id would cost the first append after a resume a
pass over the whole log.  Instead each session numbers its ids: the id of
number ``n`` is ``permute(n)``, a bijection of the 32-bit values keyed by
the session id (a four-round Feistel network), so that consecutive numbers
give unrelated-looking ids and distinct numbers give distinct ids.

A session draws its numbers, in order, from a *free window* ``[lo, hi)``:
a range of numbers that no id in the log maps to.  A new session's window is
every number.  A checkpoint records the window as it stands, so a resume
knows it from the checkpoint and the few lines after it (any id there that
falls inside moves ``lo`` past it).  Where no checkpoint records one (a log
written by another tool or an older awl), the window is the largest gap
between the numbers of the log's ids, found once from the index.
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where arrays are used: a listing never needs it
    from ._numpy import np, npt

ID_SPACE = 1 << 32
"""How many entry ids there are (8 hex digits)."""

_MASK16 = 0xFFFF
_MASK32 = 0xFFFFFFFF
_MULTIPLIER = 0x2C1B3C6D  # odd: multiplication by it is a bijection mod 2**32
_ROUNDS = 4


def _keys(session_id: str) -> tuple[int, ...]:
    data = session_id.encode("utf-8", "surrogatepass")
    # zlib, not hashlib: hashlib's OpenSSL binding costs every process 3 ms.
    return tuple(zlib.crc32(data, 0x9E3779B9 * (i + 1) & _MASK32) & _MASK16 for i in range(_ROUNDS))


def _round(r: Any, k: int) -> Any:
    # Works on ints and on numpy uint64 arrays alike.
    t = (((r + k) & _MASK16) * _MULTIPLIER) & _MASK32
    t ^= t >> 15
    return (t >> 8) & _MASK16


class IdPermutation:
    """The session's bijection between id numbers and ids (both 32-bit)."""

    __slots__ = ("_keys",)

    def __init__(self, session_id: str) -> None:
        self._keys = _keys(session_id)

    def id_of(self, number: int) -> str:
        """The id (8 hex digits) of an id number."""
        left, right = number >> 16, number & _MASK16
        for k in self._keys:
            left, right = right, left ^ _round(right, k)
        return f"{(left << 16) | right:08x}"

    def ids_of(self, start: int, n: int) -> list[str]:
        """The ids of the ``n`` numbers from ``start`` (a batch's draws, in one call)."""
        if n < 64:
            return [self.id_of(number) for number in range(start, start + n)]
        from ._numpy import np

        v = np.arange(start, start + n, dtype=np.uint64)
        left, right = v >> np.uint64(16), v & np.uint64(_MASK16)
        for k in self._keys:
            left, right = right, left ^ _round(right, k)
        return [f"{x:08x}" for x in ((left << np.uint64(16)) | right).tolist()]

    def number_of(self, value: int) -> int:
        """The id number of an id given as its 32-bit value (``int(id, 16)``)."""
        left, right = value >> 16, value & _MASK16
        for k in reversed(self._keys):
            left, right = right ^ _round(left, k), left
        return (left << 16) | right

    def numbers_of(self, values: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
        """:meth:`number_of` of an array of id values."""
        from ._numpy import np

        v = values.astype(np.uint64)
        left, right = v >> np.uint64(16), v & np.uint64(_MASK16)
        for k in reversed(self._keys):
            left, right = right ^ _round(left, k), left
        out: npt.NDArray[np.uint64] = (left << np.uint64(16)) | right
        return out


def largest_gap(numbers: npt.NDArray[np.uint64]) -> tuple[int, int]:
    """The widest ``[lo, hi)`` of id numbers holding none of ``numbers``."""
    from ._numpy import np

    if not len(numbers):
        return 0, ID_SPACE
    c = np.unique(numbers.astype(np.int64))
    starts = np.concatenate(([0], c + 1))  # each gap starts after a used number
    ends = np.concatenate((c, [ID_SPACE]))
    best = int(np.argmax(ends - starts))
    return int(starts[best]), int(ends[best])


class IdWindow:
    """The id numbers a session may still draw: ``[lo, hi)``, none of them used."""

    __slots__ = ("hi", "lo", "permutation")

    def __init__(self, permutation: IdPermutation, lo: int = 0, hi: int = ID_SPACE) -> None:
        self.permutation = permutation
        self.lo = lo
        self.hi = hi

    @classmethod
    def around(cls, permutation: IdPermutation, used: npt.NDArray[Any]) -> IdWindow:
        """The widest window between the numbers of ``used`` (id values)."""
        lo, hi = largest_gap(permutation.numbers_of(used))
        return cls(permutation, lo, hi)

    def __len__(self) -> int:
        return self.hi - self.lo

    def skip(self, values: Iterable[int]) -> None:
        """Leave out the numbers of ids found in the log (lines after a checkpoint):
        the window then starts after the last of them that falls inside it."""
        for value in values:
            n = self.permutation.number_of(value)
            if self.lo <= n < self.hi:
                self.lo = n + 1

    def draw(self) -> str:
        """The next id; IndexError when the window is used up."""
        if self.lo >= self.hi:
            raise IndexError("the free id window is used up")
        number = self.lo
        self.lo += 1
        return self.permutation.id_of(number)

    def bounds(self) -> tuple[int, int]:
        """``(lo, hi)`` as a checkpoint records it."""
        return self.lo, self.hi


# ── session ids ──

_last_uuid = 0
_uuid_lock = threading.Lock()


def uuid7(t: float | None = None) -> str:
    """A UUIDv7 string, lowercase: 48 bits of Unix milliseconds, then random bits.

    Ids therefore sort by creation time, as do the file names made from them.
    Within one process they are strictly increasing: an id made in the same
    millisecond as the one before is that one plus one (RFC 9562's counter
    method), so sessions created back to back still list in order.
    """
    global _last_uuid
    ms = int((time.time() if t is None else t) * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b
    with _uuid_lock:
        if value <= _last_uuid and (_last_uuid >> 80) == (value >> 80):
            value = _next_in_ms(_last_uuid)
        _last_uuid = value
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _next_in_ms(value: int) -> int:
    # Increment the 74 random bits (rand_a then rand_b), skipping the fixed
    # version and variant bits; a wrap would need 2^74 ids in a millisecond.
    rand_a = (value >> 64) & 0xFFF
    rand_b = value & ((1 << 62) - 1)
    counter = ((rand_a << 62) | rand_b) + 1
    rand_a, rand_b = (counter >> 62) & 0xFFF, counter & ((1 << 62) - 1)
    head = value >> 80 << 80
    return head | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
